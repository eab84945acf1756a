// Rules on [project]: `runtime.min_version` names the oldest Zebric runtime the blueprint runs on.
// bp follows the 0.6 grammar, so it satisfies any 0.6 or older; a later minimum means the author
// relies on something bp may not know, which is worth a warning (Zebric 0.6 would refuse to start).

import type { CompileContext } from '../../context.ts';
import { table, type Raw } from '../../model/raw.ts';

/** The Zebric version whose grammar bp follows. */
const FOLLOWS = { major: 0, minor: 6 };

export function checkProject(ctx: CompileContext, raw: Raw): void {
  const minVersion = table(raw.runtime).min_version;
  if (typeof minVersion !== 'string' || minVersion === '') return;
  const at = ['project', 'runtime', 'min_version'];
  const m = /^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+][0-9A-Za-z.-]*)?$/.exec(minVersion);
  if (!m) {
    ctx.report(
      'RUNTIME_VERSION',
      at,
      `min_version "${minVersion}" is not a version (major.minor or major.minor.patch)`,
      {
        severity: 'warning',
        hint: 'e.g. min_version = "0.6.0"',
      },
    );
    return;
  }
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major > FOLLOWS.major || (major === FOLLOWS.major && minor > FOLLOWS.minor)) {
    ctx.report(
      'RUNTIME_VERSION',
      at,
      `the blueprint asks for Zebric ${minVersion} or later; bp follows the ${FOLLOWS.major}.${FOLLOWS.minor} grammar`,
      {
        severity: 'warning',
        hint: 'keys added after 0.6 are reported as unknown; lower min_version if the blueprint uses none',
      },
    );
  }
}
