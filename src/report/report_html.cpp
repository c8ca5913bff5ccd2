// The HTML report: a static page whose script renders the embedded report
// JSON into tables and a Chart.js bar chart of per-layer SQNR.

#include "qfx/report/report_html.h"

#include <nlohmann/json.hpp>

namespace qfx {
namespace detail {
extern const char* const kChartJs;  // generated from third_party/chart.js (chart_js.cpp.in)
}  // namespace detail
namespace {

constexpr const char* kHead = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>qfx report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.float td { color: #888; }
#chart-box, #sensitivity-box { width: 100%; max-width: 1100px; height: 360px; }
.muted { color: #777; }
</style>
</head>
<body>
<h1 id="title">qfx report</h1>
<div id="summary"></div>
<div id="models"></div>
<div id="compare"><h2>Per-layer SQNR (dB, higher is better)</h2><div id="chart-box"><canvas id="sqnr-chart"></canvas></div><div id="compare-table"></div></div>
<div id="sensitivity"><h2>Sensitivity (each node alone float / alone quantized)</h2><div id="sensitivity-box"><canvas id="sensitivity-chart"></canvas></div><div id="sensitivity-table"></div></div>
<div id="nodes"></div>
<script type="application/json" id="qfx-report">)html";

constexpr const char* kRender = R"html(</script>
<script>
(function () {
  const report = JSON.parse(document.getElementById('qfx-report').textContent);
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    children.forEach(c => e.append(c instanceof Node ? c : String(c)));
    return e;
  };
  const fixed = (v, n) => (v === null || v === undefined) ? '' : Number(v).toFixed(n);
  const table = (headers, rows, numeric) => {
    const t = el('table', {}, el('tr', {}, ...headers.map(h => el('th', {}, h))));
    rows.forEach(r => t.append(el('tr', r.cls ? {class: r.cls} : {},
        ...r.cells.map((c, i) => el('td', numeric[i] ? {class: 'num'} : {}, c)))));
    return t;
  };
  const section = (id, title, content) => {
    const box = document.getElementById(id);
    box.append(el('h2', {}, title), content);
  };
  if (report.title) { document.getElementById('title').textContent = report.title; document.title = report.title; }

  const summary = [];
  if (report.model) summary.push('Model: ' + report.model);
  const nodes = report.nodes || [];
  if (nodes.length) {
    const quantized = nodes.filter(n => n.quantized).length;
    summary.push(nodes.length + ' float nodes, ' + quantized + ' quantized, ' + (nodes.length - quantized) + ' left float');
  }
  if (report.timings) {  // in pipeline order (JSON objects come sorted by key)
    const stages = ['import_s', 'prepare_s', 'train_s', 'calibrate_s', 'convert_s', 'export_s'];
    const keys = Object.keys(report.timings).sort((a, b) =>
        (stages.indexOf(a) + 1 || 99) - (stages.indexOf(b) + 1 || 99));
    summary.push('Time: ' + keys.map(k => k.replace(/_s$/, '') + ' ' + fixed(report.timings[k], 3) + ' s').join(', '));
  }
  if (summary.length) section('summary', 'Summary', el('div', {}, ...summary.map(s => el('div', {}, s))));

  if (report.models && report.models.length) {
    const rows = report.models.map(m => ({cells: [m.name,
        m.top1 === undefined ? '' : fixed(100 * m.top1, 2) + '%',
        m.top5 === undefined ? '' : fixed(100 * m.top5, 2) + '%',
        m.size_bytes === undefined ? '' : fixed(m.size_bytes / 1024, 0) + ' KB',
        m.latency_ms_per_image === undefined ? '' : fixed(m.latency_ms_per_image, 4) + ' ms']}));
    section('models', 'Accuracy, size and latency',
            table(['model', 'top-1', 'top-5', 'size', 'latency / image'], rows, [false, true, true, true, true]));
  }

  const compare = report.compare;
  if (compare && compare.layers && compare.layers.length) {
    const layers = compare.layers.concat([compare.output]);
    const rows = layers.map(l => ({cells: [l.name, l.float_node, l.target || l.op, l.module_type || '',
                                          l.sqnr_db === null ? 'inf' : fixed(l.sqnr_db, 2),
                                          fixed(l.normalized_l2, 6), fixed(l.cosine, 6)]}));
    document.getElementById('compare-table').append(
        el('div', {class: 'muted'}, compare.batches + ' batches'),
        table(['layer', 'float node', 'target', 'module type', 'SQNR dB', 'norm L2', 'cosine'], rows,
              [false, false, false, false, true, true, true]));
    const canvas = document.getElementById('sqnr-chart');
    const chart = new Chart(canvas, {
      type: 'bar',
      data: {labels: layers.map(l => l.name),
             datasets: [{label: 'SQNR (dB)', data: layers.map(l => l.sqnr_db === null ? 100 : l.sqnr_db),
                         backgroundColor: 'rgb(31, 119, 180)'}]},
      options: {animation: false, responsive: true, maintainAspectRatio: false,
                scales: {y: {beginAtZero: true, title: {display: true, text: 'dB'}}}}
    });
    canvas.setAttribute('data-rendered-bars', String(chart.getDatasetMeta(0).data.length));
  } else {
    document.getElementById('compare').remove();
  }

  const sensitivity = report.sensitivity;
  if (sensitivity && sensitivity.nodes && sensitivity.nodes.length) {
    const unit = sensitivity.metric === 'top1' ? '%' : ' dB';
    const score = v => v === null ? 'inf' : fixed(v, 2) + unit;
    const rows = sensitivity.nodes.map((n, i) => ({cells: [i + 1, n.node, n.target + (n.module_type ? ' (' + n.module_type + ')' : ''),
                                                           score(n.only_float), score(n.only_quantized)]}));
    document.getElementById('sensitivity-table').append(
        el('div', {class: 'muted'}, sensitivity.metric + ': float ' + score(sensitivity.float) + ', all quantized ' +
           score(sensitivity.quantized) + '; ' + fixed(sensitivity.seconds, 1) + ' s'),
        table(['rank', 'node', 'target', 'only this float', 'only this quantized'], rows,
              [true, false, false, true, true]));
    const canvas = document.getElementById('sensitivity-chart');
    const chart = new Chart(canvas, {
      type: 'bar',
      data: {labels: sensitivity.nodes.map(n => n.node),
             datasets: [{label: 'only this node float', data: sensitivity.nodes.map(n => n.only_float),
                         backgroundColor: 'rgb(31, 119, 180)'},
                        {label: 'only this node quantized', data: sensitivity.nodes.map(n => n.only_quantized),
                         backgroundColor: 'rgb(255, 127, 14)'}]},
      options: {animation: false, responsive: true, maintainAspectRatio: false,
                scales: {y: {title: {display: true, text: sensitivity.metric}}}}
    });
    canvas.setAttribute('data-rendered-bars', String(chart.getDatasetMeta(0).data.length));
  } else {
    document.getElementById('sensitivity').remove();
  }

  if (nodes.length) {
    const qp = q => !q ? '' : Array.isArray(q.scale) ? 'per-channel (' + q.scale.length + ')'
                            : 'scale ' + Number(q.scale).toPrecision(6) + ', zp ' + q.zero_point + ' (' + q.dtype + ')';
    const rows = nodes.map(n => ({cls: n.quantized ? '' : 'float', cells: [n.name, n.op, n.target, n.module_type || '',
        n.quantized ? 'yes' : 'no', n.mode || '', n.reason || (n.fused_into ? 'fused into ' + n.fused_into : ''),
        qp(n.output_qparams), qp(n.weight_qparams)]}));
    section('nodes', 'Nodes',
            table(['node', 'op', 'target', 'module type', 'quantized', 'mode', 'why / where', 'output qparams',
                   'weight qparams'], rows, [false, false, false, false, false, false, false, false, false]));
  }
})();
</script>
</body>
</html>
)html";

/// JSON safe inside a <script> element: no `</` can close it.
std::string script_json(const nlohmann::json& value) {
  std::string text = value.dump();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string report_html(const nlohmann::json& report) {
  std::string page = kHead;
  page += script_json(report);
  page += "</script>\n<script>\n";
  page += detail::kChartJs;
  page += "\n";
  page += kRender;
  return page;
}

}  // namespace qfx
