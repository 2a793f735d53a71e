#!/usr/bin/env node
// ONNX Runtime (CPU execution provider, MLAS kernels) timing for bench/ort_compare.sh.
//
//   node ort_bench.js MODEL.onnx [--threads=1[,2]] [--warmup=N] [--runs=M] [--shape=1,3,224,224]
//                     [--input=FILE.npy] [--start-at=EPOCH_MS] [--rate=PER_S]
//                     [--ready=FILE --start-file=FILE]
//
// For each thread count: one InferenceSession with intraOpNumThreads=T, interOpNumThreads=1,
// executionMode 'sequential', graphOptimizationLevel 'all'; N warm-up runs, then M timed runs of
// session.run() on one input (the same tensor every run): --input's float32 .npy (the tensor co_up
// gets with --input=), else a seeded random one. --start-at: after warm-up, wait until this
// wall-clock time (ms since the epoch) before the timed runs, so that two processes started side by
// side time the same stretch. --rate: requests arrive evenly spaced at this many per second from
// the timed start (request i at i / rate), each run when it has arrived and the previous one is
// done, and "latency_ms" holds each request's time from arrival to completion (queueing
// included), as co_up --workload measures it; without --rate every request arrives at the timed
// start.
// Prints one JSON object per line: {"threads", "median_ms", "fps"
// (= 1000 / median_ms), "min_ms", "max_ms", "times_ms", "timed_start_ms", "timed_end_ms" (epoch),
// "cpu_per_wall", "load_ms", ...}. Pinning is the caller's job (taskset -c 0 for 1 thread, -c 0-1
// for 2); cpu_per_wall (process CPU time / wall time over the timed runs) shows how many cores it
// got. The times include the Node binding's per-call cost (tensor wrapping, output copy, the
// promise); bench/ort_compare.sh measures it on an Identity model of the same shape.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function usage(msg) {
  if (msg) process.stderr.write(`ort_bench.js: ${msg}\n`);
  process.stderr.write('usage: node ort_bench.js MODEL.onnx [--threads=1,2] [--warmup=N] [--runs=M] ' +
                       '[--shape=1,3,224,224]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {model: null, threads: [1], warmup: 5, runs: 20, shape: null, input: null, startAt: 0, rate: 0};
  for (const a of argv) {
    const m = /^--([a-z-]+)=(.*)$/.exec(a);
    if (!m) {
      if (a.startsWith('--')) usage(`unknown option ${a}`);
      if (opts.model) usage('one model only');
      opts.model = a;
      continue;
    }
    const [, key, value] = m;
    const ints = () => value.split(',').map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 0) usage(`--${key}: not a non-negative integer list: ${value}`);
      return n;
    });
    if (key === 'threads') opts.threads = ints();
    else if (key === 'warmup') opts.warmup = ints()[0];
    else if (key === 'runs') opts.runs = ints()[0];
    else if (key === 'shape') opts.shape = ints();
    else if (key === 'input') opts.input = value;
    else if (key === 'start-at') opts.startAt = Number(value);
    else if (key === 'ready') opts.ready = value;
    else if (key === 'start-file') opts.startFile = value;
    else if (key === 'rate') {
      opts.rate = Number(value);
      if (!(opts.rate > 0)) usage(`--rate: requests per second must be > 0, got ${value}`);
    }
    else usage(`unknown option --${key}`);
  }
  if (!opts.model) usage('no model');
  if (opts.runs < 1) usage('--runs must be >= 1');
  if (!fs.existsSync(opts.model)) usage(`no such file: ${opts.model}`);
  return opts;
}

// Deterministic input (xorshift32), values in [-1, 1): no dependence on Math.random.
function seededInput(n, seed) {
  const data = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; ++i) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    data[i] = (x / 4294967296) * 2 - 1;
  }
  return data;
}

// A float32 little-endian C-order .npy file (version 1 or 2 header): {shape, data}.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') usage(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12);
  const header = buf.toString('latin1', start, start + headerLen);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header)) {
    usage(`${file}: only float32 little-endian C-order arrays are read`);
  }
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((x) => x.trim()).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  const data = new Float32Array(count);
  for (let i = 0; i < count; ++i) data[i] = buf.readFloatLE(offset + 4 * i);
  return {shape, data};
}

function median(sorted) {
  const n = sorted.length;
  return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

function inputShape(session, opts) {
  if (opts.shape) return opts.shape;
  // onnxruntime-node >= 1.21 exposes input metadata; fall back to ImageNet batch 1.
  const meta = session.inputMetadata;
  if (meta && meta.length && Array.isArray(meta[0].shape) &&
      meta[0].shape.every((d) => Number.isInteger(d) && d > 0)) {
    return meta[0].shape;
  }
  return [1, 3, 224, 224];
}

async function benchOne(opts, threads) {
  const loadStart = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(opts.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6;
  let shape, data;
  if (opts.input) {
    ({shape, data} = readNpy(opts.input));
  } else {
    shape = inputShape(session, opts);
    data = seededInput(shape.reduce((a, b) => a * b, 1), 12345);
  }
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', data, shape)};

  let checksum = 0;
  for (let i = 0; i < opts.warmup; ++i) await session.run(feeds);
  // --ready / --start-file: a caller running several of these says when to start once all are
  // warm (it writes the start time, epoch ms, into the start file after every ready file exists).
  if (opts.ready) fs.writeFileSync(opts.ready, String(process.pid));
  if (opts.startFile) {
    while (!fs.existsSync(opts.startFile) || fs.readFileSync(opts.startFile, 'utf8').trim() === '') {
      await new Promise((r) => setTimeout(r, 5));
    }
    opts.startAt = Number(fs.readFileSync(opts.startFile, 'utf8').trim());
  }
  while (opts.startAt > Date.now()) await new Promise((r) => setTimeout(r, Math.min(50, opts.startAt - Date.now())));
  // Epoch milliseconds with sub-millisecond resolution, comparable across processes.
  const epochMs = () => performance.timeOrigin + performance.now();
  const timedStart = epochMs();
  const times = [];
  const latencies = [];
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  for (let i = 0; i < opts.runs; ++i) {
    const arrival = opts.rate > 0 ? timedStart + (1000 * i) / opts.rate : timedStart;
    while (epochMs() < arrival) {
      const wait = arrival - epochMs();
      // Sleep whole milliseconds, spin only the sub-millisecond rest (timers fire late by up to 1 ms).
      if (wait >= 1) await new Promise((r) => setTimeout(r, Math.floor(wait)));
    }
    const t0 = process.hrtime.bigint();
    const out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    latencies.push(epochMs() - arrival);
    if (i === opts.runs - 1) {
      const y = out[session.outputNames[0]].data;
      for (let j = 0; j < y.length; ++j) checksum += y[j];
    }
  }
  const wallUs = Number(process.hrtime.bigint() - wall0) / 1e3;
  const timedEnd = epochMs();
  const cpu = process.cpuUsage(cpu0);
  if (typeof session.release === 'function') await session.release();

  const sorted = times.slice().sort((a, b) => a - b);
  const med = median(sorted);
  return {
    runtime: 'onnxruntime-node',
    version: ort.env.versions ? ort.env.versions.common : undefined,
    model: path.basename(opts.model),
    shape,
    threads,
    warmup: opts.warmup,
    runs: opts.runs,
    median_ms: +med.toFixed(3),
    fps: +(1000 / med).toFixed(3),
    min_ms: +sorted[0].toFixed(3),
    max_ms: +sorted[sorted.length - 1].toFixed(3),
    times_ms: times.map((t) => +t.toFixed(3)),
    timed_start_ms: +timedStart.toFixed(3),
    timed_end_ms: +timedEnd.toFixed(3),
    rate: opts.rate > 0 ? opts.rate : null,
    latency_ms: latencies.map((t) => +t.toFixed(3)),
    input: opts.input ? path.basename(opts.input) : 'seeded',
    cpu_per_wall: +((cpu.user + cpu.system) / wallUs).toFixed(3),
    load_ms: +loadMs.toFixed(1),
    checksum: +checksum.toFixed(4),
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  for (const t of opts.threads) {
    process.stdout.write(JSON.stringify(await benchOne(opts, t)) + '\n');
  }
}

main().catch((e) => {
  process.stderr.write(`ort_bench.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
