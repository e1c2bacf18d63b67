package scheduler

import (
	"html/template"
	"time"
)

// pageTemplate is the status page: plain HTML and inline SVG, no script;
// it reloads itself every 5 seconds. html/template escapes every value.
var pageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"heartbeat": heartbeat,
	"num":       num,
	"utc":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="5">
<title>xps {{.Prefix}}: {{.State}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1000px; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.15em; margin-top: 1.4em; }
table { border-collapse: collapse; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.state { font-size: 1.1em; } .gone { color: #999; } .err { color: #b00; }
svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>xps cluster <code>{{.Prefix}}</code>{{if .Job}}, job <code>{{.Job}}</code>{{end}}</h1>
<p class="state">State <b id="state">{{.State}}</b> at version <b id="version">{{.Version}}</b>{{if not .StateTime.IsZero}} (since {{utc .StateTime}}){{end}}.</p>
<p id="role">{{if .Leading}}This scheduler, <b>{{.Self}}</b>, leads the cluster.{{else}}This scheduler, <b>{{.Self}}</b>, is a <b>standby</b>: {{if .Leader}}the leader is <b>{{.Leader}}</b>{{if .LeaderAddr}} at {{.LeaderAddr}}{{end}}{{else}}no leader is known{{end}}; the state is the one the leader recorded.{{end}}</p>
<p id="lag">Kafka lag: {{if ge .Lag 0}}<b>{{.Lag}}</b> messages behind (summed over the live workers){{else}}no Kafka source{{end}}.</p>
{{range .Problems}}<p class="err">could not read {{.}}</p>
{{end}}
<h2>Members</h2>
<table id="members">
<tr><th>kind</th><th>id</th><th>address</th><th>pid</th><th>started</th><th>last heartbeat</th></tr>
{{range .Members}}<tr><td>{{.Kind}}</td><td>{{.ID}}</td><td>{{.Addr}}</td><td class="n">{{.PID}}</td><td>{{if not .Started.IsZero}}{{utc .Started}}{{end}}</td><td>{{heartbeat .}}</td></tr>
{{else}}<tr><td colspan="6">no member registered</td></tr>
{{end}}</table>

<h2>Workers</h2>
<table id="workers">
<tr><th>worker</th><th>epoch</th><th>samples</th><th>samples/s</th><th>loss</th><th>window AUC</th><th>running AUC</th><th>test AUC</th><th>Kafka lag</th><th>rows</th><th>last report</th></tr>
{{range .Rows}}<tr{{if not .Live}} class="gone"{{end}}><td>{{.Name}}{{if not .Live}} (gone){{end}}</td><td>{{.Epoch}}</td><td class="n">{{.Samples}}</td><td class="n">{{.Rate}}</td><td class="n">{{.Loss}}</td><td class="n">{{.AUC}}</td><td class="n">{{.Running}}</td><td class="n">{{.TestAUC}}</td><td class="n">{{.Lag}}</td><td class="n">{{.Rows}}</td><td>{{.Last}}</td></tr>
{{else}}<tr><td colspan="11">no progress report yet</td></tr>
{{end}}</table>

{{range .Charts}}<h2>{{.Title}}</h2>
<div class="chart" id="chart-{{.ID}}">{{if .SVG}}{{.SVG}}{{else}}<p>{{.Note}}</p>{{end}}</div>
{{end}}
<h2>Snapshots</h2>
<table id="snapshots">
<tr><th>seq</th><th>time</th><th>seconds</th><th>samples applied</th><th>rows</th><th>workers paused</th><th>outcome</th></tr>
{{range .Snapshots}}<tr><td class="n">{{.Seq}}</td><td>{{utc .Time}}</td><td class="n">{{num .Seconds 2}}</td><td class="n">{{.Applied}}</td><td class="n">{{.Rows}}</td><td class="n">{{.Workers}}</td><td>{{if .Error}}<span class="err">failed: {{.Error}}</span>{{else}}ok{{end}}</td></tr>
{{else}}<tr><td colspan="7">none seen since this scheduler started</td></tr>
{{end}}</table>

<h2>Exports</h2>
<table id="exports">
<tr><th>seq</th><th>kind</th><th>time</th><th>seconds</th><th>paused</th><th>samples</th><th>rows</th><th>deletes</th><th>bytes</th><th>outcome</th></tr>
{{range .Exports}}<tr><td class="n">{{.Seq}}</td><td>{{.Kind}}{{if .Base}} on {{.Base}}{{end}}</td><td>{{utc .Time}}</td><td class="n">{{num .Seconds 2}}</td><td class="n">{{num .PauseSeconds 2}}</td><td class="n">{{.Samples}}</td><td class="n">{{.Rows}}</td><td class="n">{{.Deletes}}</td><td class="n">{{.Bytes}}</td><td>{{if .Error}}<span class="err">failed: {{.Error}}</span>{{else}}ok{{end}}</td></tr>
{{else}}<tr><td colspan="10">none seen since this scheduler started</td></tr>
{{end}}</table>

<p><small>Generated {{utc .Now}}; reloads every 5 s. The same figures as JSON: <a href="status.json">status.json</a>.</small></p>
</body>
</html>
`
