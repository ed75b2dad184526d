// The status page's one style sheet (login form, status cards, settings editor, trend chart).
// Tables fit 1280 px: long words (subjects, URIs, thumbprints, errors) wrap inside their cells
// instead of widening the table.

export const APP_CSS = `:root{--bg:#f4f5f7;--fg:#1d2430;--muted:#667085;--card:#fff;--line:#e3e6ea;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--accent:#0b5cad;--mono:ui-monospace,Menlo,Consolas,monospace}
*{box-sizing:border-box}body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header{display:flex;gap:1em;align-items:center;padding:.6em 1.2em;background:#1d2430;color:#fff;flex-wrap:wrap}
header h1{font-size:1.2em;margin:0;flex:1}header small{color:#aab;font-weight:normal}
header button{background:transparent;color:#fff;border:1px solid #667;border-radius:4px;padding:.2em .7em;cursor:pointer}
header nav{display:flex;gap:.4em}header nav button[aria-pressed=true]{background:#3a4456}
.live{font-size:.85em;padding:.15em .6em;border-radius:1em;background:var(--ok)}.live.off{background:var(--bad)}
main{display:grid;grid-template-columns:1fr 1fr;gap:1em;padding:1em 1.2em}
.card,.wide{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.8em 1em;min-width:0}.wide{grid-column:1/-1;overflow-x:auto}
h2{font-size:1em;margin:0 0 .6em;display:flex;gap:1em;align-items:center;flex-wrap:wrap}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:0}dt{color:var(--muted)}dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid var(--line);white-space:nowrap}
th{color:var(--muted);font-weight:600;font-size:.9em}td.num{text-align:right;font-variant-numeric:tabular-nums}td.err{white-space:normal;color:var(--muted);max-width:32em}
td.wrap{white-space:normal;overflow-wrap:anywhere;min-width:8em}td.thumb{white-space:normal;word-break:break-all;font:12px/1.3 var(--mono);min-width:14em;max-width:18em}
#certs{table-layout:auto}
#devices tbody tr,#tags tbody tr{cursor:pointer}#devices tbody tr.watched,#tags tbody tr.trended{background:#eef4fb}
#tags td.name::after{content:"";margin-left:.4em}#tags tr[data-history="1"] td.name::after{content:"◷";color:var(--muted)}
.state{font-weight:600}.state[data-state=ok]{color:var(--ok)}.state[data-state=failing],.state[data-state=demoted]{color:var(--bad)}.state[data-state=waiting],.state[data-state=disabled]{color:var(--muted)}
.q0{color:var(--ok)}.q1{color:var(--warn)}.q2{color:var(--bad)}
#log{list-style:none;margin:0;padding:0;max-height:18em;overflow-y:auto;font:12px/1.5 var(--mono)}
#log li{white-space:pre-wrap}#log .error,#log .warning{color:var(--bad)}#log .notice{color:var(--accent)}#log time{color:var(--muted);margin-right:.8em}
button.act,.tool{margin-right:.4em;border:1px solid var(--line);background:#fff;border-radius:4px;padding:.15em .6em;cursor:pointer;font:inherit;font-size:.9em}
.tool.primary{background:var(--accent);color:#fff;border-color:var(--accent)}.tool:disabled{opacity:.5;cursor:default}
#reload{font-size:.85em;border:1px solid var(--line);background:#fff;border-radius:4px;padding:.15em .7em;cursor:pointer}
#toast{position:fixed;bottom:1em;right:1em;max-width:40em;background:#1d2430;color:#fff;padding:.7em 1em;border-radius:6px;white-space:pre-wrap;z-index:10}
body.login{display:flex;justify-content:center;align-items:center;min-height:100vh}
body.login form{display:flex;flex-direction:column;gap:.8em;width:22em}body.login input{width:100%;padding:.4em;margin-top:.2em}
body.login button{padding:.5em;background:var(--accent);color:#fff;border:0;border-radius:4px;cursor:pointer}
.bad{color:var(--bad)}.ok{color:var(--ok)}.hint{color:var(--muted);font-size:.85em}
#attention-card,#network-trial{border-color:var(--bad)}#attention{margin:0;padding-left:1.2em;color:var(--bad)}#attention li{margin:.2em 0}
#import-card pre{white-space:pre-wrap;margin:.4em 0 0;font:12px/1.5 var(--mono)}
.toolbar{display:flex;flex-wrap:wrap;gap:.3em;align-items:center;margin-bottom:.6em}.grow{flex:1}
a.tool{color:inherit;text-decoration:none;display:inline-block}
.tabs{display:flex;gap:.3em}.tabs button{border:1px solid var(--line);background:#fff;border-radius:4px 4px 0 0;padding:.3em .9em;cursor:pointer;font:inherit}.tabs button[aria-selected=true]{background:var(--accent);color:#fff;border-color:var(--accent)}
.editor{display:flex;border:1px solid var(--line);border-radius:4px;height:28em;overflow:hidden;font:13px/1.45 var(--mono);background:#fff}
.editor .gutter{margin:0;padding:.4em .5em;text-align:right;color:var(--muted);background:#f6f7f9;border-right:1px solid var(--line);overflow:hidden;user-select:none;white-space:pre;min-width:3.5em}
.editor .gutter b{display:block;font-weight:normal}.editor .gutter b.issue{background:#ffe3e3;color:var(--bad);font-weight:700}
.editor textarea{flex:1;border:0;margin:0;padding:.4em .6em;font:inherit;resize:none;outline:none;white-space:pre;overflow:auto;tab-size:2;color:var(--fg)}
.editor textarea[readonly]{background:#fafbfc}
#editor-status{font-size:.9em}#editor-status.valid{color:var(--ok)}#editor-status.invalid{color:var(--bad)}
.issues{list-style:none;margin:.5em 0 0;padding:0;font:12px/1.5 var(--mono)}.issues li{cursor:pointer;color:var(--bad);padding:.1em .3em}.issues li:hover{background:#fff0f0}
.diff{margin:.6em 0 0;padding:.4em 0;border:1px solid var(--line);border-radius:4px;max-height:24em;overflow:auto;font:12px/1.45 var(--mono);background:#fff}
.diff div{white-space:pre;padding:0 .6em}.diff .add{background:#e6ffec}.diff .del{background:#ffebe9}.diff .gap{color:var(--muted);background:#f6f7f9}
.diff span.ln{display:inline-block;width:3.5em;padding-right:.6em;text-align:right;color:var(--muted);user-select:none}
.panel{margin-top:.6em;border-top:1px solid var(--line);padding-top:.6em}
.panel table td{white-space:normal}
.form-grid{display:grid;grid-template-columns:max-content 1fr;gap:.4em .8em;align-items:center;max-width:48em}
.form-grid input,.form-grid select,.toolbar input{font:inherit;padding:.15em .4em}
fieldset{border:1px solid var(--line);border-radius:4px;margin:.6em 0;padding:.4em .8em}
.panel pre.progress{margin:.4em 0;padding:.4em .6em;max-height:12em;overflow:auto;font:12px/1.45 var(--mono);background:#f6f7f9;border-radius:4px;white-space:pre-wrap}
#trend-card .chart{width:100%;height:18em}
#trend svg{width:100%;height:100%;display:block}#trend text{font:11px var(--mono);fill:var(--muted)}
#trend .grid{stroke:var(--line)}#trend polyline{fill:none;stroke:var(--accent);stroke-width:1.5}#trend polyline.live{stroke:var(--ok)}
#trend .band{fill:#0b5cad22;stroke:none}#trend .cursor{stroke:var(--muted);stroke-dasharray:3 3}
@media (max-width:800px){main{grid-template-columns:1fr}}
`;
