// A page's `[page.X.form]` as the generator writes it into src/pages.ts: plain data, checked at
// generate time (the entity, every field, the optionsFrom query and the lookup entity exist).

import type { PageQuerySpec } from './page-spec.ts';

/** Zebric 0.6's form field types. */
export type FormFieldType =
  | 'text'
  | 'textarea'
  | 'email'
  | 'password'
  | 'number'
  | 'select'
  | 'checkbox'
  | 'radio'
  | 'file'
  | 'date'
  | 'datetime'
  | 'hidden'
  | 'lookup';

/** A choice of a select or radio field, as the browser sends it (`value`) and shows it (`label`). */
export interface FormOption {
  value: string;
  label: string;
}

export interface PageFormFieldSpec {
  /** A field of the form's entity. */
  name: string;
  /** As written, or the entity field's natural control when the blueprint names none. */
  type: FormFieldType;
  /** As written; absent: the field name, humanized. */
  label?: string;
  placeholder?: string;
  required?: boolean;
  /** The value a create form starts with. */
  default?: unknown;
  /** bp's `value`: a fixed value (a hidden field's), sent whatever the browser says. */
  value?: unknown;
  options?: readonly FormOption[];
  /** Choices from a query of the page: each record's `value` field, shown by its `label` field. */
  optionsFrom?: { query: string; value: string; label: string; emptyLabel?: string };
  rows?: number;
  pattern?: string;
  min?: number;
  max?: number;
  errorMessage?: string;
  accept?: readonly string[];
  /** A lookup: the choices are the first records of this query (the entity's, filtered, ordered). */
  lookup?: { query: PageQuerySpec; key: string; display: string; placeholder?: string };
}

export interface PageFormSectionSpec {
  title?: string;
  description?: string;
  layout?: 'single-column' | 'two-column' | 'inline' | 'card-group';
  fields: readonly string[];
}

export interface PageFormSpec {
  entity: string;
  method: 'create' | 'update' | 'delete';
  fields: readonly PageFormFieldSpec[];
  sections?: readonly PageFormSectionSpec[];
  /** `summary` also lists the refused fields above the form; the messages stand beside each field either way. */
  validation?: 'inline' | 'summary' | 'none';
  onSuccess?: { redirect?: string; message?: string };
  onError?: { message?: string };
}
