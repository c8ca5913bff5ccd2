#!/usr/bin/env node
// ONNX Runtime (npm's onnxruntime-node, CPU) for qfx's tests, demo and
// benchmarks: runs an ONNX model on raw float32 inputs, evaluates a
// classifier on IDX images, times a model, lists the kernels ONNX Runtime ran.
//
//   qfx_ort.js run   MODEL.onnx OUT.bin IN.bin:1,3,224,224[:int64] ...   [--threads N] [--opt all|disabled]
//   qfx_ort.js eval  MODEL.onnx IMAGES.gz LABELS.gz --mean M --std S [--batch-size N] [--json FILE]
//                    (the JSON has `qfx eval --json`'s keys)
//   qfx_ort.js bench MODEL.onnx 1,3,224,224                   (latency at batch 1 and 8, 1 and 2 threads, JSON)
//   qfx_ort.js ops   MODEL.onnx 1,3,224,224 [--threads N]     (kernel op types ONNX Runtime ran, as JSON)
//
// Errors are one line on stderr and exit 1.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const ort = require('onnxruntime-node');

function fail(message) {
  process.stderr.write(`qfx_ort: error: ${message}\n`);
  process.exit(1);
}

function options(argv) {
  const positional = [];
  const flags = {};
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i].startsWith('--')) {
      flags[argv[i].slice(2)] = argv[i + 1];
      ++i;
    } else {
      positional.push(argv[i]);
    }
  }
  return { positional, flags };
}

function shapeOf(text) {
  const dims = text.split(',').map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d <= 0)) fail(`bad shape '${text}'`);
  return dims;
}

async function session(model, flags, extra = {}) {
  const opts = {
    intraOpNumThreads: Number(flags.threads || 1),
    interOpNumThreads: 1,
    graphOptimizationLevel: flags.opt || 'all',
    executionMode: 'sequential',
    logSeverityLevel: 3,  // errors only: not ONNX Runtime's notes on initializers it drops
    ...extra,
  };
  try {
    return await ort.InferenceSession.create(model, opts);
  } catch (e) {
    fail(`${model}: ${e.message.split('\n')[0]}`);
  }
}

/// A raw little-endian input file: float32, or int64 (token ids, indices).
function readTensor(file, dims, dtype = 'float32') {
  const buf = fs.readFileSync(file);
  const n = dims.reduce((a, b) => a * b, 1);
  const Type = dtype === 'int64' ? BigInt64Array : Float32Array;
  const bytes = Type.BYTES_PER_ELEMENT * n;
  if (buf.length !== bytes) fail(`${file}: ${buf.length} bytes, expected ${bytes} for ${dtype} shape ${dims.join(',')}`);
  const data = new Type(n);
  Buffer.from(data.buffer).set(buf);
  return new ort.Tensor(dtype, data, dims);
}

/// run: the outputs, float32 in order, concatenated into OUT.bin.
async function run(argv) {
  const { positional, flags } = options(argv);
  const [model, out, ...inputs] = positional;
  const s = await session(model, flags);
  const feeds = {};
  inputs.forEach((spec, i) => {  // FILE:SHAPE or FILE:SHAPE:int64
    const dtype = spec.endsWith(':int64') ? 'int64' : 'float32';
    const file = dtype === 'int64' ? spec.slice(0, -':int64'.length) : spec;
    const at = file.lastIndexOf(':');
    feeds[s.inputNames[i]] = readTensor(file.slice(0, at), shapeOf(file.slice(at + 1)), dtype);
  });
  const result = await s.run(feeds);
  const parts = s.outputNames.map((name) => {
    const t = result[name];
    const data = t.type === 'float32' ? t.data : Float32Array.from(t.data, Number);
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  });
  fs.writeFileSync(out, Buffer.concat(parts));
}

function readIdx(file) {
  let buf = fs.readFileSync(file);
  if (file.endsWith('.gz')) buf = zlib.gunzipSync(buf);
  const rank = buf[3];
  const dims = [];
  for (let i = 0; i < rank; ++i) dims.push(buf.readUInt32BE(4 + 4 * i));
  return { dims, data: buf.subarray(4 + 4 * rank) };
}

/// eval: top-1 of a classifier on IDX images, normalized as qfx's data
/// loader does in float32: (pixel / 255 - mean) / std.
async function evaluate(argv) {
  const { positional, flags } = options(argv);
  const [model, imagesFile, labelsFile] = positional;
  const s = await session(model, flags);
  const images = readIdx(imagesFile);
  const labels = readIdx(labelsFile).data;
  const [count, h, w] = images.dims;
  const mean = Math.fround(Number(flags.mean || 0));
  const std = Math.fround(Number(flags.std || 1));
  const table = new Float32Array(256);
  for (let p = 0; p < 256; ++p) table[p] = Math.fround(Math.fround(Math.fround(p / 255) - mean) / std);
  const batch = Number(flags['batch-size'] || 64);
  let correct = 0;
  let classes = 0;
  let runNs = 0n;
  for (let first = 0; first < count; first += batch) {
    const n = Math.min(batch, count - first);
    const data = new Float32Array(n * h * w);
    for (let i = 0; i < n * h * w; ++i) data[i] = table[images.data[first * h * w + i]];
    const t0 = process.hrtime.bigint();
    const result = await s.run({ [s.inputNames[0]]: new ort.Tensor('float32', data, [n, 1, h, w]) });
    runNs += process.hrtime.bigint() - t0;
    const logits = result[s.outputNames[0]].data;
    classes = logits.length / n;
    for (let i = 0; i < n; ++i) {
      let best = 0;
      for (let k = 1; k < classes; ++k) if (logits[i * classes + k] > logits[i * classes + best]) best = k;
      if (best === labels[first + i]) ++correct;
    }
  }
  const ms = Number(runNs) / 1e6 / count;
  const threads = Number(flags.threads || 1);
  // the keys of `qfx eval --json`, so `qfx report` and the demo table read both
  const report = {
    model, data: imagesFile, items: count, top1: correct / count, latency_ms_per_image: ms, batch_size: batch,
    classes, threads, runtime: `onnxruntime ${ort.env.versions.node}`,
  };
  if (flags.json) fs.writeFileSync(flags.json, JSON.stringify(report, null, 1) + '\n');
  console.log(`top-1 ${(100 * report.top1).toFixed(2)}% (${correct}/${count}) with ONNX Runtime\n` +
              `latency ${ms.toFixed(4)} ms/image at batch ${batch} (${threads} threads)`);
}

function randomInput(dims) {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let seed = 1;
  for (let i = 0; i < n; ++i) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    data[i] = seed / 2147483648 - 0.5;
  }
  return new ort.Tensor('float32', data, dims);
}

/// Seconds per run of `fn` after 3 warm-up runs, in rounds of 10 runs until
/// the last three rounds' medians lie within 5% of each other (3 to 8
/// rounds): the median and min-max of the rounds' medians, as bench_flow
/// and bench/flow.py measure LibTorch and PyTorch.
async function latency(fn) {
  const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
  for (let i = 0; i < 3; ++i) await fn();
  const rounds = [];
  while (rounds.length < 8) {
    const times = [];
    for (let i = 0; i < 10; ++i) {
      const t0 = process.hrtime.bigint();
      await fn();
      times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    rounds.push(median(times));
    if (rounds.length < 3) continue;
    const last = rounds.slice(-3);
    if (Math.max(...last) - Math.min(...last) < 0.05 * median(last)) break;
  }
  return { median: median(rounds), min: Math.min(...rounds), max: Math.max(...rounds), rounds: rounds.length };
}

/// bench: latency at batch 1 and 8 (the batch size replaces dim 0 of the
/// shape) with 1 and 2 threads, as JSON keyed b<batch>_t<threads>.
async function bench(argv) {
  const { positional, flags } = options(argv);
  const [model, shape] = positional;
  const out = {};
  for (const threads of [1, 2]) {
    for (const batch of [1, 8]) {
      const s = await session(model, { ...flags, threads });
      const dims = shapeOf(shape);
      dims[0] = batch;
      const feeds = { [s.inputNames[0]]: randomInput(dims) };
      out[`b${batch}_t${threads}`] = await latency(() => s.run(feeds));
    }
  }
  console.log(JSON.stringify(out));
}

/// ops: how many nodes of each kernel op type one run executed.
async function ops(argv) {
  const { positional, flags } = options(argv);
  const [model, shape] = positional;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qfx_ort_'));
  const prefix = path.join(dir, 'profile');
  const s = await session(model, flags, { enableProfiling: true, profileFilePrefix: prefix });
  await s.run({ [s.inputNames[0]]: randomInput(shapeOf(shape)) });
  s.endProfiling();
  const counts = {};
  for (const file of fs.readdirSync(dir)) {
    for (const event of JSON.parse(fs.readFileSync(path.join(dir, file)))) {
      if (event.cat === 'Node' && event.name.endsWith('_kernel_time')) {
        counts[event.args.op_name] = (counts[event.args.op_name] || 0) + 1;
      }
    }
  }
  fs.rmSync(dir, { recursive: true });
  console.log(JSON.stringify(counts));
}

module.exports = { ort, session, fail };

if (require.main === module) {
  const commands = { run, eval: evaluate, bench, ops };
  const [command, ...rest] = process.argv.slice(2);
  if (!commands[command]) fail(`usage: qfx_ort.js run|eval|bench|ops ...`);
  commands[command](rest).catch((e) => fail(e.message.split('\n')[0]));
}
