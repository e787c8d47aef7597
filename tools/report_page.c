#include "tools/report_page.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* The page: styles, then the report as JSON in a script element, then the drawing code.
 * JSON is dumped with JSON_ESCAPE_SLASH so "</script>" inside a string cannot end the element. */
static const char report__head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>Paddock job report</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}\n"
    ".sum{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}\n"
    ".kv{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:8px 12px}\n"
    ".kv b{display:block;font-size:18px}.ok{color:#17803d}.bad{color:#c0262d}\n"
    "svg.chart{background:#fff;border:1px solid #dde2ea;border-radius:6px;display:block}\n"
    ".legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;"
    "height:12px;margin-right:4px;vertical-align:-1px}\n"
    "text{font:11px system-ui,sans-serif;fill:#4a5263}\n"
    "table.att{border-collapse:collapse;background:#fff;border:1px solid #dde2ea}\n"
    "table.att td,table.att th{padding:3px 8px;border-bottom:1px solid #eef0f4;text-align:left;"
    "vertical-align:top}\ncode.logs{font:12px ui-monospace,monospace;user-select:all}\n"
    "</style></head><body>\n<h1 id=\"title\">Job report</h1><div id=\"sub\"></div>\n"
    "<div class=\"sum\" id=\"summary\"></div>\n"
    "<h2>Task attempts by node</h2><div class=\"legend\" id=\"gantt-legend\"></div>"
    "<div id=\"gantt\"></div>\n"
    "<h2>Guaranteed tokens</h2><div class=\"legend\" id=\"tokens-legend\"></div>"
    "<div id=\"tokens\"></div>\n"
    "<h2>Progress against the deadline</h2><div class=\"legend\" id=\"progress-legend\"></div>"
    "<div id=\"progress\"></div>\n"
    "<h2>Attempts and their output</h2><p id=\"attempts-note\">Each attempt's stdout and stderr "
    "stay on the node that ran it while the node keeps the task's directory; the command beside "
    "it prints them (<code>--follow</code> while it runs).</p>"
    "<table class=\"att\" id=\"attempts-table\"><tr><th>task</th><th>attempt</th><th>node</th>"
    "<th>state</th><th>reason</th><th>output</th></tr></table>\n"
    "<script type=\"application/json\" id=\"report\">";

static const char report__tail[] =
    "</script>\n<script>\n"
    "'use strict';\n"
    "const R=JSON.parse(document.getElementById('report').textContent);\n"
    "const NS='http://www.w3.org/2000/svg';\n"
    "function el(n,a,p){const e=document.createElementNS(NS,n);for(const k in a)e.setAttribute(k,"
    "a[k]);if(p)p.appendChild(e);return e;}\n"
    "function fmt(s){return s==null?'-':(s<120?s.toFixed(1)+' s':(s/60).toFixed(1)+' min');}\n"
    "function legend(id,items){const d=document.getElementById(id);for(const [c,t] of items){"
    "const s=document.createElement('span');s.innerHTML='<i class=\"sw\" style=\"background:'+c+"
    "'\"></i>';s.appendChild(document.createTextNode(t));d.appendChild(s);}}\n"
    "function axes(svg,x0,y0,w,h,tmax,ymax,ylabel){\n"
    " el('line',{x1:x0,y1:y0+h,x2:x0+w,y2:y0+h,stroke:'#888'},svg);\n"
    " el('line',{x1:x0,y1:y0,x2:x0,y2:y0+h,stroke:'#888'},svg);\n"
    " for(let i=0;i<=5;i++){const t=tmax*i/5,x=x0+w*i/5;el('line',{x1:x,y1:y0+h,x2:x,y2:y0+h+4,"
    "stroke:'#888'},svg);el('text',{x:x,y:y0+h+16,'text-anchor':'middle'},svg).textContent="
    "fmt(t);}\n"
    " if(ymax!=null)for(let i=0;i<=4;i++){const v=ymax*i/4,y=y0+h-h*i/4;el('text',{x:x0-6,y:y+4,"
    "'text-anchor':'end'},svg).textContent=(ymax<=1?(v*100).toFixed(0)+'%':Math.round(v));"
    "el('line',{x1:x0,y1:y,x2:x0+w,y2:y,stroke:'#eee'},svg);}\n"
    " if(ylabel)el('text',{x:x0,y:y0-6},svg).textContent=ylabel;}\n"
    "function deadline(svg,x0,y0,h,sx){if(R.deadline_s==null)return;const x=x0+sx(R.deadline_s);"
    "el('line',{x1:x,y1:y0,x2:x,y2:y0+h,stroke:'#c0262d','stroke-dasharray':'5,4',"
    "'stroke-width':1.5},svg);el('text',{x:x+4,y:y0+12,fill:'#c0262d'},svg).textContent="
    "'deadline';}\n"
    "const atts=R.attempts||[],toks=R.tokens||[],prog=R.progress||[];\n"
    "function sh(v){v=String(v);return /^[A-Za-z0-9._@%+=:,\\/-]+$/.test(v)?v:\"'\"+"
    "v.replace(/'/g,\"'\\\\''\")+\"'\";}\n"
    "function logs(a){return 'paddock logs '+sh(R.job_id||'')+' '+sh(a.task)+' --attempt '+"
    "a.attempt+(a.state==='succeeded'?'':' --stderr');}\n"
    "let tmax=Math.max(1,R.makespan_s||0,R.deadline_s||0);\n"
    "for(const a of atts)tmax=Math.max(tmax,a.end_s||0);\n"
    "for(const s of toks)tmax=Math.max(tmax,s.t_s||0);\n"
    "tmax*=1.04;\n"
    "document.getElementById('title').textContent='Job '+(R.name||'')+' ('+(R.job_id||'')+')';\n"
    "const met=R.deadline_s==null?null:!!R.deadline_met;\n"
    "const failed=atts.filter(a=>a.state!=='succeeded').length;\n"
    "const cells=[['state',R.state,R.state==='succeeded'?'ok':'bad'],['makespan',"
    "fmt(R.makespan_s)],['deadline',R.deadline_s==null?'none':fmt(R.deadline_s),met==null?'':"
    "(met?'ok':'bad')],['deadline met',met==null?'-':(met?'yes':'no'),met==null?'':(met?'ok':"
    "'bad')],['tasks',(R.tasks_succeeded||0)+' / '+(R.tasks_total||0)],['attempts',atts.length],"
    "['attempts not succeeded',failed,failed?'bad':'']];\n"
    "if(R.attempts_started!=null)cells.push(['process starts',R.attempts_started+' for '+"
    "(R.tasks_total||0)+' tasks',R.attempts_started>(R.tasks_total||0)?'bad':'']);\n"
    "if(R.attempts_preempted!=null)cells.push(['preempted',R.attempts_preempted,"
    "R.attempts_preempted?'bad':'']);\n"
    "if(R.eta_half_s!=null)cells.push(['ETA p50 at half done',fmt(R.eta_half_s)+"
    "(R.eta_half_error!=null?' (off '+(100*R.eta_half_error).toFixed(1)+'%)':''),"
    "R.eta_half_error!=null&&R.eta_half_error>0.1?'bad':'']);\n"
    "if(R.eta_half_p95_s!=null)cells.push(['ETA p95 at half done',fmt(R.eta_half_p95_s)+"
    "(R.eta_half_p95_covered==null?'':R.eta_half_p95_covered?' (ended by it)':' (ended later)'),"
    "R.eta_half_p95_covered===false?'bad':'']);\n"
    "for(const [k,v,c] of cells){const d=document.createElement('div');d.className='kv';"
    "d.appendChild(document.createTextNode(k));const b=document.createElement('b');"
    "b.textContent=v;if(c)b.className=c;d.appendChild(b);"
    "document.getElementById('summary').appendChild(d);}\n"
    "if(R.reason)document.getElementById('sub').textContent=R.reason;\n"
    "let drawn=0;\n"
    "/* Gantt: one band per node, split into lanes so concurrent attempts never overlap; the thin\n"
    " * line before a bar is the attempt's time in the node's queue. */\n"
    "{const nodes=[...new Set(atts.map(a=>a.node||'?'))].sort();\n"
    " const lane=new Map(),lanes={};for(const n of nodes){const ends=[];atts.filter(a=>(a.node||"
    "'?')===n&&a.start_s!=null).sort((a,b)=>a.start_s-b.start_s).forEach(a=>{let i=ends.findIndex("
    "e=>e<=a.start_s);if(i<0){i=ends.length;ends.push(0);}ends[i]=a.end_s;lane.set(a,i);});"
    "lanes[n]=Math.max(1,ends.length);}\n"
    " const total=nodes.reduce((t,n)=>t+lanes[n],0);\n"
    " const laneh=Math.max(4,Math.min(14,480/Math.max(1,total))),x0=90,y0=18,w=860;\n"
    " const top={};let acc=0;for(const n of nodes){top[n]=acc;acc+=lanes[n]*laneh+4;}\n"
    " const h=Math.max(laneh,acc);\n"
    " const svg=el('svg',{class:'chart',id:'gantt-chart',width:x0+w+20,height:y0+h+30});\n"
    " const sx=t=>w*t/tmax;axes(svg,x0,y0,w,h,tmax,null,null);\n"
    " nodes.forEach((n,i)=>{if(i%2)el('rect',{x:x0,y:y0+top[n]-2,width:w,height:lanes[n]*laneh+4,"
    "fill:'#f3f5f8'},svg);el('text',{x:x0-6,y:y0+top[n]+lanes[n]*laneh/2+4,'text-anchor':'end'},"
    "svg).textContent=n;});\n"
    " const color={regular:'#2f6fdf',opportunistic:'#f08c1a'};let bars=0;\n"
    " for(const a of atts){const n=a.node||'?',s=a.start_s,e=a.end_s;if(s==null||e==null)"
    "continue;const y=y0+top[n]+lane.get(a)*laneh;\n"
    "  if(a.queued_s!=null&&a.queued_s<s)el('line',{x1:x0+sx(a.queued_s),x2:x0+sx(s),"
    "y1:y+laneh/2,y2:y+laneh/2,stroke:'#b8c0cc'},svg);\n"
    "  const ok=a.state==='succeeded';const r=el('rect',{class:'bar',x:x0+sx(s),y:y+0.5,"
    "width:Math.max(1,sx(e-s)),height:laneh-1,fill:ok?(color[a.class]||'#777'):(a.state==='"
    "preempted'?'#8e5bd6':'#c0262d'),"
    "'fill-opacity':ok?0.85:0.6},svg);bars++;\n"
    "  el('title',{},r).textContent=a.task+' #'+a.attempt+' on '+n+' ['+a.class+'] '+"
    "a.state+' '+fmt(s)+' to '+fmt(e)+(a.reason?' ('+a.reason+')':'')+'\\n'+logs(a);}\n"
    " deadline(svg,x0,y0,h,sx);svg.dataset.marks=bars;"
    "document.getElementById('gantt').appendChild(svg);drawn++;\n"
    " legend('gantt-legend',[['#2f6fdf','regular'],['#f08c1a','opportunistic'],"
    "['#8e5bd6','preempted'],['#c0262d','failed, cancelled or lost'],['#b8c0cc','queued']]);}\n"
    "function steps(svg,x0,y0,h,sx,sy,key,color,dash){const pts=toks.filter(s=>s[key]!=null);"
    "if(!pts.length)return 0;let d='';let py=null;for(const s of pts){const x=x0+sx(s.t_s),"
    "y=y0+h-sy(s[key]);d+=(d?'L'+x+','+(py==null?y:py)+'L':'M')+x+','+y;py=y;}"
    "d+='L'+(x0+sx(tmax))+','+py;el('path',{d:d,fill:'none',stroke:color,'stroke-width':2,"
    "'stroke-dasharray':dash||''},svg);return pts.length;}\n"
    "{const x0=50,y0=18,w=900,h=200;let ymax=1;for(const s of toks)for(const k of ['granted',"
    "'target','oracle','opportunistic'])if(s[k]!=null)ymax=Math.max(ymax,s[k]);const step"
    "=Math.max(1,Math.ceil(ymax*1.1/4));ymax=step*4;\n"
    " const svg=el('svg',{class:'chart',id:'tokens-chart',width:x0+w+20,height:y0+h+30});\n"
    " const sx=t=>w*t/tmax,sy=v=>h*v/ymax;axes(svg,x0,y0,w,h,tmax,ymax,'tokens');\n"
    " let n=steps(svg,x0,y0,h,sx,sy,'granted','#2f6fdf');n+=steps(svg,x0,y0,h,sx,sy,'target',"
    "'#7a3fd1','6,4');n+=steps(svg,x0,y0,h,sx,sy,'oracle','#17803d','2,3');"
    "n+=steps(svg,x0,y0,h,sx,sy,'opportunistic','#f08c1a','1,2');\n"
    " deadline(svg,x0,y0,h,sx);svg.dataset.marks=n;"
    "document.getElementById('tokens').appendChild(svg);drawn++;\n"
    " legend('tokens-legend',[['#2f6fdf','granted'],['#7a3fd1','Jockey target'],['#17803d',"
    "'oracle \\u2308T/d\\u2309'],['#f08c1a','opportunistic allowance']]);}\n"
    "{const x0=50,y0=18,w=900,h=200;const svg=el('svg',{class:'chart',id:'progress-chart',"
    "width:x0+w+20,height:y0+h+30});\n"
    " const sx=t=>w*t/tmax,sy=v=>h*v;axes(svg,x0,y0,w,h,tmax,1,'fraction of work done');\n"
    " if(R.deadline_s!=null)el('line',{x1:x0,y1:y0+h,x2:x0+sx(R.deadline_s),y2:y0,"
    "stroke:'#b8c0cc','stroke-dasharray':'4,4'},svg);\n"
    " let d='';for(const p of prog)d+=(d?'L':'M')+(x0+sx(p.t_s))+','+(y0+h-sy(p.fraction));\n"
    " if(d)el('path',{d:d,fill:'none',stroke:'#2f6fdf','stroke-width':2},svg);\n"
    " deadline(svg,x0,y0,h,sx);svg.dataset.marks=prog.length;"
    "document.getElementById('progress').appendChild(svg);drawn++;\n"
    " legend('progress-legend',[['#2f6fdf','progress'],['#b8c0cc','even pace to the deadline']]);"
    "}\n"
    "/* every attempt, those that did not succeed first, with the command that prints its output "
    "*/\n"
    "{const t=document.getElementById('attempts-table'),MAX=1000,rank={failed:0,lost:1,"
    "preempted:2,cancelled:3,succeeded:4};\n"
    " const rows=atts.slice().sort((a,b)=>((rank[a.state]??5)-(rank[b.state]??5))||"
    "((a.start_s||0)-(b.start_s||0)));\n"
    " for(const a of rows.slice(0,MAX)){const tr=document.createElement('tr');for(const v of "
    "[a.task,a.attempt,a.node||'?',a.state,a.reason||'']){const td=document.createElement('td');"
    "td.textContent=v;tr.appendChild(td);}const td=document.createElement('td'),c="
    "document.createElement('code');c.className='logs';c.textContent=logs(a);td.appendChild(c);"
    "tr.appendChild(td);t.appendChild(tr);}\n"
    " if(rows.length>MAX)document.getElementById('attempts-note').appendChild("
    "document.createTextNode(' The first '+MAX+' of '+rows.length+' attempts are listed.'));}\n"
    "document.body.dataset.charts=drawn;\n"
    "</script></body></html>\n";

static int report__check_array(json_t *root, const char *key, char *msg, size_t cap)
{
    json_t *v = json_object_get(root, key);
    if (v != NULL && !json_is_array(v))
        return err_fmt(msg, cap, ERR_PARSE, "report: \"%s\" must be an array", key);
    return 0;
}

int report_page_render(const char *json_path, FILE *out, char *msg, size_t cap)
{
    json_error_t jerr;
    json_t *root = json_load_file(json_path, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return err_fmt(msg, cap, ERR_PARSE, "%s:%d: %s", json_path, jerr.line, jerr.text);
    int rc = 0;
    json_t *version = json_object_get(root, "version");
    if (!json_is_object(root))
        rc = err_fmt(msg, cap, ERR_PARSE, "%s: not a JSON object", json_path);
    else if (!json_is_integer(version) || json_integer_value(version) != 1)
        rc = err_fmt(msg, cap, ERR_VERSION, "%s: report version must be 1", json_path);
    else if ((rc = report__check_array(root, "attempts", msg, cap)) == 0 &&
             (rc = report__check_array(root, "tokens", msg, cap)) == 0)
        rc = report__check_array(root, "progress", msg, cap);
    if (rc != 0) {
        json_decref(root);
        return rc;
    }
    char *text = json_dumps(root, JSON_COMPACT | JSON_ESCAPE_SLASH | JSON_ENSURE_ASCII);
    json_decref(root);
    if (text == NULL)
        return err_fmt(msg, cap, ERR_NOMEM, "report: cannot serialise");
    fputs(report__head, out);
    fputs(text, out);
    fputs(report__tail, out);
    free(text);
    if (ferror(out))
        return err_fmt(msg, cap, ERR_IO, "report: write failed");
    return 0;
}
