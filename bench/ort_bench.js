//===- bench/ort_bench.js - Time a model with onnxruntime-node ------------===//
// SPDX-License-Identifier: Apache-2.0
//
// Runs an ONNX model with onnxruntime-node on the CPU execution provider
// (graphOptimizationLevel 'all', sequential execution, intraOpNumThreads T,
// interOpNumThreads 1): reads each graph input from INPUT_DIR/<name>.npy
// (characters outside [A-Za-z0-9._-] replaced by '_', as
// scripts/make_model_inputs.py names them), runs WARMUP untimed and ITERS
// timed inferences, writes the outputs of the last run as
// OUT_DIR/<output name>.npy ('/' replaced by '_', as dist-opt executables do)
// and prints one line in the format of a dist-opt executable's --bench:
//
//   latency_ms_median=<x> latency_ms_p90=<y>
//
// Usage: node bench/ort_bench.js MODEL.onnx INPUT_DIR OUT_DIR
//            [--threads T] [--iters N] [--warmup W]
// Errors: one `error:` line on stderr, exit 1.

'use strict';

const fs = require('fs');
const path = require('path');

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  fail('cannot load onnxruntime-node (run `npm install --prefix bench`): ' +
       e.message.split('\n')[0]);
}

//===----------------------------------------------------------------------===//
// .npy files
//===----------------------------------------------------------------------===//

// numpy descr (without the byte order) -> [onnxruntime type, TypedArray].
const NPY_TYPES = {
  f4: ['float32', Float32Array],
  f8: ['float64', Float64Array],
  i1: ['int8', Int8Array],
  u1: ['uint8', Uint8Array],
  i2: ['int16', Int16Array],
  u2: ['uint16', Uint16Array],
  i4: ['int32', Int32Array],
  u4: ['uint32', Uint32Array],
  i8: ['int64', BigInt64Array],
  u8: ['uint64', BigUint64Array],
  b1: ['bool', Uint8Array],
  f2: ['float16', Uint16Array],
};
const ORT_TO_DESCR = {
  float32: '<f4', float64: '<f8', int8: '|i1', uint8: '|u1', int16: '<i2',
  uint16: '<u2', int32: '<i4', uint32: '<u4', int64: '<i8', uint64: '<u8',
  bool: '|b1', float16: '<f2',
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    fail(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const order = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !order || !shape) fail(`${file}: bad .npy header`);
  if (order[1] === 'True') fail(`${file}: Fortran order is not supported`);
  const code = descr[1];
  if (code[0] === '>') fail(`${file}: big-endian data is not supported`);
  const type = NPY_TYPES[code.slice(1)];
  if (!type) fail(`${file}: unsupported dtype ${code}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s)
                   .map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  // Copy into an aligned buffer: the data offset need not be aligned.
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset + offset,
                               buf.length - offset).slice();
  const data = new type[1](bytes.buffer, 0, count);
  if (type[0] === 'bool') return new ort.Tensor('bool', data, dims);
  return new ort.Tensor(type[0], data, dims);
}

function writeNpy(file, tensor) {
  const descr = ORT_TO_DESCR[tensor.type];
  if (!descr) fail(`cannot write output of type ${tensor.type}`);
  const dims = tensor.dims;
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, ` +
               `'shape': ${shape}, }`;
  // Pad so that magic (6) + version (2) + length (2) + header is a multiple
  // of 64 bytes, ending in a newline.
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'),
                                        body]));
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

function median(sorted) {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

// Nearest-rank percentile.
function percentile(sorted, p) {
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function parseArgs(argv) {
  const opts = {threads: 1, iters: 100, warmup: 10, positional: []};
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const num = (name) => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0) fail(`${name} needs a count`);
      return v;
    };
    if (a === '--threads') opts.threads = num(a);
    else if (a === '--iters') opts.iters = num(a);
    else if (a === '--warmup') opts.warmup = num(a);
    else if (a.startsWith('--')) fail(`unknown option ${a}`);
    else opts.positional.push(a);
  }
  if (opts.positional.length !== 3)
    fail('usage: ort_bench.js MODEL.onnx INPUT_DIR OUT_DIR [--threads T] ' +
         '[--iters N] [--warmup W]');
  if (opts.threads < 1 || opts.iters < 1)
    fail('--threads and --iters must be positive');
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const [model, inputDir, outDir] = opts.positional;
  let session;
  try {
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
    });
  } catch (e) {
    fail(`cannot load ${model}: ${e.message.split('\n')[0]}`);
  }
  const feeds = {};
  for (const name of session.inputNames) {
    const file = path.join(inputDir,
                           name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy');
    if (!fs.existsSync(file)) fail(`no input file ${file}`);
    feeds[name] = readNpy(file);
  }

  let results;
  try {
    for (let i = 0; i < opts.warmup; ++i) results = await session.run(feeds);
    const times = [];
    for (let i = 0; i < opts.iters; ++i) {
      const start = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    times.sort((a, b) => a - b);
    fs.mkdirSync(outDir, {recursive: true});
    for (const name of session.outputNames)
      writeNpy(path.join(outDir, name.replace(/\//g, '_') + '.npy'),
               results[name]);
    console.log(`latency_ms_median=${median(times).toFixed(4)} ` +
                `latency_ms_p90=${percentile(times, 90).toFixed(4)}`);
  } catch (e) {
    fail(`inference failed: ${e.message.split('\n')[0]}`);
  }
}

main();
