// The document of the blueprint's pages: a header with the app's name, the pages this person may
// open and their account, a message left by the last action, then the page. Like every page of the
// app (document.ts) it is self-contained: inline CSS, no scripts, so it works under PAGE_CSP.

import { html, type Html, trusted } from './html.ts';

/** Who is looking, as the header shows them. */
export type Account =
  { signedIn: false; loginHref: string } | { signedIn: true; email: string; logoutAction: string; csrfToken: string };

export interface Flash {
  kind: 'success' | 'error';
  text: string;
}

export interface PageFrame {
  appTitle: string;
  title: string;
  /** The pages without parameters this person may open, for the navigation. */
  nav: ReadonlyArray<{ href: string; title: string; current: boolean }>;
  account?: Account;
  flash?: Flash;
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1f2328}
header{display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:center;padding:.75rem 1.5rem;
  background:#24292f;color:#fff}
header a{color:#fff}
header .app{font-weight:700;text-decoration:none;font-size:1.1rem}
header nav{display:flex;flex-wrap:wrap;gap:1rem;flex:1}
header nav a[aria-current=page]{font-weight:700;text-decoration-thickness:2px}
header form{margin:0}
header button{margin:0;padding:.3rem .75rem;background:#57606a}
main{max-width:64rem;margin:1.5rem auto;padding:0 1rem}
h1{margin:0 0 1rem;font-size:1.6rem}
h2{margin:1.75rem 0 .5rem;font-size:1.2rem}
section,.panel{background:#fff;border:1px solid #d0d7de;border-radius:.5rem;padding:1rem 1.25rem;margin:0 0 1rem}
table{width:100%;border-collapse:collapse;background:#fff}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid #d8dee4;vertical-align:top}
th{font-size:.85rem;text-transform:uppercase;letter-spacing:.03em;color:#57606a}
.table{overflow-x:auto;border:1px solid #d0d7de;border-radius:.5rem;background:#fff}
dl{display:grid;grid-template-columns:minmax(8rem,max-content) 1fr;gap:.4rem 1.25rem;margin:0}
dt{font-weight:600;color:#57606a}
dd{margin:0;overflow-wrap:anywhere;white-space:pre-wrap}
.none{color:#6e7781}
.status{display:inline-block;margin-left:.5rem;padding:.1rem .6rem;font-size:.9rem;font-weight:600;
  vertical-align:middle;border-radius:1rem;background:#ddf4ff;color:#0550ae}
.pager{display:flex;gap:1rem;margin:.75rem 0}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;align-items:flex-start}
.actions form{background:#fff;border:1px solid #d0d7de;border-radius:.5rem;padding:.75rem}
label{display:block;margin:.5rem 0 .25rem;font-weight:600}
input,select,textarea{width:100%;padding:.5rem .6rem;font:inherit;border:1px solid #8c959f;border-radius:.375rem}
input[type=checkbox],input[type=radio]{width:auto}
a:focus,input:focus,select:focus,textarea:focus,button:focus{outline:3px solid #0969da;outline-offset:2px}
button{margin-top:.5rem;padding:.5rem 1rem;font:inherit;font-weight:600;color:#fff;background:#1f6feb;border:0;
  border-radius:.375rem;cursor:pointer}
button.secondary,button.ghost{color:#1f2328;background:#eaeef2}
button.danger{background:#cf222e}
a{color:#0969da}
.flash{margin:0 0 1rem;padding:.75rem 1rem;border-radius:.375rem;border:1px solid}
.flash.success{color:#116329;background:#dafbe1;border-color:#4ac26b}
.flash.error,.field-error{color:#82071e;background:#ffebe9;border-color:#ff8182}
.field-error{display:block;margin:.25rem 0;padding:.25rem .5rem;border-radius:.25rem}
.page-form{max-width:42rem;background:#fff;border:1px solid #d0d7de;border-radius:.5rem;padding:1rem 1.25rem}
.page-form .field{margin:0 0 .75rem}
.page-form fieldset{margin:0 0 1rem;padding:.25rem 1rem .5rem;border:1px solid #d0d7de;border-radius:.5rem}
.page-form fieldset.field{padding:0;border:0}
.page-form fieldset.field legend{padding:0}
legend{padding:0 .25rem;font-weight:700}
.check label,.choice{display:flex;gap:.5rem;align-items:center;font-weight:400}
.two-column .section-fields,.card-group .section-fields{display:grid;gap:0 1rem;
  grid-template-columns:repeat(auto-fit,minmax(14rem,1fr))}
.inline .section-fields{display:flex;flex-wrap:wrap;gap:0 1rem;align-items:flex-end}
.flash p,.flash ul{margin:0}
select{background-color:#fff}
.action-bar{display:flex;flex-wrap:wrap;gap:.75rem 1.5rem;align-items:center;justify-content:space-between}
.bar-head p{margin:0}.bar-title{font-weight:700}
.bar-actions,.bar-secondary{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
.bar-secondary{flex-basis:100%;font-size:.9rem}
.bar-action{margin:0}.bar-action button{margin:0}
a.button,span.button{display:inline-block;padding:.5rem 1rem;font-weight:600;border-radius:.375rem;text-decoration:none;
  color:#fff;background:#1f6feb}
a.button.secondary,a.button.ghost,span.button.secondary{color:#1f2328;background:#eaeef2}
a.button.danger{background:#cf222e}
a.button.link,span.button.link,button.link{padding:0;color:#0969da;background:none;text-decoration:underline;
  font-weight:400}
button:disabled,.button.disabled{opacity:.55;cursor:not-allowed}
.board{display:flex;gap:1rem;overflow-x:auto;align-items:flex-start;padding-bottom:.5rem}
.column{flex:0 0 16rem;margin:0;padding:.75rem;background:#eaeef2}
.column h2{margin:0 0 .5rem;font-size:1rem}
.count{padding:0 .5rem;font-size:.8rem;border-radius:1rem;background:#d0d7de}
.cards{list-style:none;margin:0;padding:0;display:grid;gap:.5rem}
.card{background:#fff;border:1px solid #d0d7de;border-radius:.375rem;padding:.6rem .75rem}
.card h3{margin:0;font-size:1rem}.card p{margin:.25rem 0}
.card dl{grid-template-columns:max-content 1fr;gap:.1rem .75rem;font-size:.9rem}
.card form{margin:.5rem 0 0}.card label{margin:.25rem 0;font-size:.85rem}
.card select,.card input{padding:.3rem .4rem}
.card button{margin-top:.35rem;padding:.3rem .75rem}
.toggles{display:flex;gap:.25rem}.toggles form{margin:0}
button.toggle{margin:0;padding:.1rem .5rem;color:#57606a;background:none;border:1px solid #d0d7de}
button.toggle.on{color:#9a6700;background:#fff8c5}
details summary{cursor:pointer;font-size:.85rem;color:#0969da}
[role=alertdialog] form a{margin-left:1rem}
@media (prefers-color-scheme:dark){
  body{background:#0d1117;color:#e6edf3}
  section,.panel,table,.table,.actions form,.card{background:#161b22;border-color:#30363d}
  .page-form,.page-form fieldset{background:#161b22;border-color:#30363d}
  .column,.count{background:#0d1117}
  th,td{border-color:#30363d}
  th,dt,.none{color:#9198a1}
  input,select,textarea{background:#0d1117;color:#e6edf3;border-color:#6e7681}
  a{color:#4493f8}
  .status{background:#0c2d6b;color:#cae8ff}
  button.secondary,button.ghost{color:#e6edf3;background:#30363d}
}
`;

/** The whole document of a page whose body is `main`. */
export function pageDocument(frame: PageFrame, main: Html): string {
  const nav = frame.nav.map(
    (p) => html`<a href="${p.href}"${p.current ? trusted(' aria-current="page"') : ''}>${p.title}</a>`,
  );
  const flash = frame.flash ? html`<p class="flash ${frame.flash.kind}" role="status">${frame.flash.text}</p>\n` : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${frame.title} · ${frame.appTitle}</title>
<style>${trusted(STYLE)}</style>
</head>
<body>
<header>
<a class="app" href="/">${frame.appTitle}</a>
<nav aria-label="Pages">${nav}</nav>
${frame.account ? accountPart(frame.account) : ''}
</header>
<main>
${flash}<h1>${frame.title}</h1>
${main}</main>
</body>
</html>
`.text;
}

function accountPart(account: Account): Html {
  if (!account.signedIn) return html`<a href="${account.loginHref}">Sign in</a>`;
  return html`<span>${account.email}</span>
<form method="post" action="${account.logoutAction}">
<input type="hidden" name="_csrf" value="${account.csrfToken}">
<button type="submit">Sign out</button>
</form>`;
}
