#!/usr/bin/env bash
# The HTML report in a real browser: `qfx quantize --report-html` on the
# compare fixture model, opened by headless Chromium with every host name
# unresolvable (the page must need no network). Checks that the chart drew
# one bar per compared layer plus the output (from the DOM after its script
# ran) and that the screenshot shows the bars' colour over a real area.
#   report_html_test.sh QFX_BINARY FIXTURES_DIR PYTHON
set -euo pipefail
qfx=$1
fixtures=$2
python=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
browser=(chromium --headless --disable-gpu --no-sandbox --host-resolver-rules="MAP * ~NOTFOUND"
         --user-data-dir="$out/profile" --window-size=1200,1400)

"$qfx" quantize "$fixtures/compare_model.pt" -o "$out/int8.pt" --calib "$fixtures/compare_calib.pt" \
  --batch-size 8 -q --report-html "$out/report.html" --report "$out/report.json"
if grep -Eq '(src|href)="https?:' "$out/report.html"; then
  echo "report.html loads a remote resource"; exit 1
fi
"${browser[@]}" --dump-dom "file://$out/report.html" 2>/dev/null >"$out/dom.html"
"${browser[@]}" --screenshot="$out/report.png" "file://$out/report.html" >/dev/null 2>&1
"$python" - "$out" <<'PY'
import json, os, re, sys
from PIL import Image
out = sys.argv[1]
dom = open(os.path.join(out, 'dom.html')).read()
bars = re.search(r'data-rendered-bars="(\d+)"', dom)
assert bars, 'the chart script did not run'
# compare fixture: conv1, conv2, add_relu, pool, flatten, fc1, fc2 and the output
assert int(bars.group(1)) == 8, bars.group(1)
for text in ('add_relu', 'Per-layer SQNR', 'weight qparams', 'int8'):
    assert text in dom, text
image = Image.open(os.path.join(out, 'report.png')).convert('RGB')
bar_pixels = sum(1 for p in image.getdata() if p == (31, 119, 180))
assert bar_pixels > 20000, f'only {bar_pixels} pixels of the bar colour: the chart did not render'
print(f'report.html: chart of {bars.group(1)} bars, {bar_pixels} bar pixels in the screenshot')
PY
echo "report_html checks passed"
