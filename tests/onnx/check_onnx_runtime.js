#!/usr/bin/env node
// Runs the ONNX models the oracle tests exported (tests/support/fixtures.h,
// keep_for_onnx) in ONNX Runtime and checks them against qfx:
//  - optimizations off (ONNX Runtime runs the QDQ graph as written: float ops
//    between QuantizeLinear/DequantizeLinear): qfx's reference model's output
//    within 1e-4 of its largest magnitude (one output step for the models of
//    ROUNDING, whose float op ONNX Runtime rounds differently, with why);
//  - optimizations on (QDQ groups fused into integer kernels: QLinearConv,
//    QGemm, ...): the lowered model's output within one output quantization
//    step (1e-4 relative for a float output). Where the lowered model itself
//    is further than that from the reference model (PyTorch's dynamic linear
//    kernels, some add-relu lowerings), ONNX Runtime follows the reference
//    and must be within the step of it instead; the line says so.
// On a CPU without VNNI, ONNX Runtime's u8 x s8 kernels add products pair by
// pair in 16 bits (VPMADDUBSW) and saturate, as its quantization docs say
// (docs/divergences.md): there the fused check of a model with a Conv, Gemm,
// MatMul or recurrent op is printed, not asserted.
// Prints one line per model and the cases without an ONNX form with their
// reasons; exits 1 when a model disagrees or when fewer than MIN_EXPORTED
// models were exported.
//   check_onnx_runtime.js DIR [MIN_EXPORTED]
'use strict';
const fs = require('fs');
const path = require('path');
const { ort, session } = require('../../tools/ort/qfx_ort.js');

function readRaw(file, dtype) {
  const buf = fs.readFileSync(file);
  const Type = dtype === 'int64' ? BigInt64Array : Float32Array;
  const out = new Type(buf.length / Type.BYTES_PER_ELEMENT);
  Buffer.from(out.buffer).set(buf);
  return out;
}

async function outputs(dir, record, opt) {
  const s = await session(path.join(dir, record.model), { opt, threads: 1 });
  const feeds = {};
  record.inputs.forEach((input, i) => {
    feeds[s.inputNames[i]] = new ort.Tensor(input.dtype, readRaw(path.join(dir, input.file), input.dtype), input.shape);
  });
  const result = await s.run(feeds);
  const values = [];
  for (const name of s.outputNames) values.push(...Array.from(result[name].data, Number));
  return values;
}

/// Largest |a - b| and largest |b|.
function difference(a, b) {
  if (a.length !== b.length) return { size: `${a.length} values, expected ${b.length}` };
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; ++i) {
    const bothNaN = Number.isNaN(a[i]) && Number.isNaN(b[i]);
    const e = Math.abs(a[i] - b[i]);
    diff = Math.max(diff, bothNaN ? 0 : Number.isNaN(e) ? Infinity : e);  // one NaN side disagrees
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return { diff, scale };
}

// Models with a float op ONNX Runtime does not compute bit for bit as ATen,
// so that a value next to a rounding boundary of a later QuantizeLinear lands
// one step apart: their reference check allows one output step (`step`:
// the record's, or the output scale where the record has none), with why.
const ROUNDING = {
  suite_resize_shuffle_ops: {
    why: 'bilinear Resize is float ulps apart from ATen\'s upsample_bilinear2d '
      + '(7.6e-6 at 52.79 in OnnxExportOracle.MovesPadsAndFloorArithmeticAreLibTorchs)',
  },
  onnx_quantized_lstm_longer_sequence: {
    why: 'QuantizeLinear divides by its scale, ATen\'s quantize multiplies by the float inverse: '
      + 'one of its 168 outputs sits on a rounding tie (the backward half at the last step, '
      + 'requantized to the forward half\'s qparams by the concatenation)',
  },
  suite_window_mask_assignment: {
    why: 'one of its 144 outputs is one step apart: a float Conv or Add sums in another order than ATen '
      + '(the float model exports exactly)',
    step: 0.006690897,
  },
};

// Models with a quantized recurrence (the static LSTM's gates are quantized
// at every time step): a value that lands one step apart on a rounding tie
// (float ops ONNX Runtime computes other than ATen: MLAS's Sigmoid and Tanh,
// its MatMul's sums) is carried into every later step, so their reference
// check is an SQNR floor, with why; how far they drift depends on the CPU.
const RECURRENT = {
  suite_static_lstm: 'every gate requantized at each of 5 time steps',
  onnx_quantized_lstm_longer_sequence: 'every gate requantized at each of the sequence\'s time steps',
};
const RECURRENT_FLOOR_DB = 15;  // as OracleSuite.LoweredMatchesReference allows LibTorch's lowered LSTM

/// The SQNR of `a` against `b`, in dB.
function sqnr(a, b) {
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < a.length; ++i) {
    signal += b[i] * b[i];
    noise += (a[i] - b[i]) * (a[i] - b[i]);
  }
  return noise === 0 ? Infinity : 10 * Math.log10(signal / noise);
}

const VNNI = /\b(avx512_vnni|avx_vnni)\b/.test(fs.readFileSync('/proc/cpuinfo', 'utf8'));
const SATURATING_OPS = ['Conv', 'Gemm', 'MatMul', 'LSTM', 'GRU', 'RNN'];

/// Whether ONNX Runtime's integer kernels may saturate on this model here.
function saturates(dir, record) {
  if (VNNI) return false;
  const model = fs.readFileSync(path.join(dir, record.model));
  return SATURATING_OPS.some((op) => model.includes(op));
}

async function check(dir, record) {
  const problems = [];
  const reference = Array.from(readRaw(path.join(dir, record.reference), 'float32'));
  const plain = difference(await outputs(dir, record, 'disabled'), reference);
  const rounding = ROUNDING[Object.keys(ROUNDING).find((name) => record.name.startsWith(name))];
  const step = rounding && (record.step > 0 ? record.step : rounding.step);
  const plainLimit = step ? step * (1 + 1e-5) : 1e-4 * Math.max(plain.scale, 1e-6);
  const recurrent = RECURRENT[Object.keys(RECURRENT).find((name) => record.name.startsWith(name))];
  const unfused = plain.size ? 0 : sqnr(await outputs(dir, record, 'disabled'), reference);
  if (plain.size || (plain.diff > plainLimit && !(recurrent && unfused >= RECURRENT_FLOOR_DB))) {
    const floor = recurrent ? ` (SQNR ${unfused.toFixed(1)} dB < ${RECURRENT_FLOOR_DB})` : '';
    problems.push(`reference: ${plain.size || `max |difference| ${plain.diff} > ${plainLimit}${floor}`}`);
  }
  let fused = '';
  if (record.step >= 0) {
    const lowered = Array.from(readRaw(path.join(dir, record.lowered), 'float32'));
    const optimized = await outputs(dir, record, 'all');
    const d = difference(optimized, lowered);
    // float32 outputs one step apart differ by the step up to float rounding
    const limit = record.step > 0 ? record.step * (1 + 1e-5) : 1e-4 * Math.max(d.scale, 1e-6);
    const apart = difference(lowered, reference).diff > limit;
    const r = difference(optimized, reference);
    const against = apart ? r : d;
    const saturating = saturates(dir, record);
    if (against.size || (against.diff > limit && !saturating)) {
      problems.push(`${apart ? 'reference' : 'lowered'} (fused): ${against.size || `max |difference| ${against.diff} > ${limit}`}`);
    }
    fused = `, fused vs ${apart ? 'reference (lowered is further from it than a step)' : 'lowered'} ${against.diff} (step ${record.step})`;
    if (saturating && against.diff > limit) fused += ' (not asserted: saturating integer kernels without VNNI)';
  }
  let why = rounding ? ` (within a step: ${rounding.why})` : '';
  if (recurrent && plain.diff > plainLimit) why = ` (SQNR ${unfused.toFixed(1)} dB >= ${RECURRENT_FLOOR_DB}: ${recurrent})`;
  return { problems, line: `reference ${plain.diff}${why}${fused}` };
}

async function main() {
  const [dir, minExported] = process.argv.slice(2);
  const records = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f))));
  let failures = 0;
  const unsupported = {};
  let exported = 0;
  for (const record of records) {
    if (record.error) {
      const reason = record.error.replace(/^ONNX export: node %\S+ /, '');
      (unsupported[reason] = unsupported[reason] || []).push(record.name);
      continue;
    }
    ++exported;
    const { problems, line } = await check(dir, record);
    console.log(`${problems.length ? 'FAIL' : 'ok  '} ${record.name}: ${problems.length ? problems.join('; ') : line}`);
    failures += problems.length ? 1 : 0;
  }
  console.log(`\n${exported} of ${records.length} models exported and run in ONNX Runtime; ${failures} disagree`);
  for (const [reason, names] of Object.entries(unsupported)) {
    console.log(`not exported (${names.length}): ${reason}: ${names.join(' ')}`);
  }
  if (failures > 0 || exported < Number(minExported || 0)) process.exit(1);
}

main().catch((e) => {
  console.error(`check_onnx_runtime: error: ${e.message}`);
  process.exit(1);
});
