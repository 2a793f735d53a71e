#!/usr/bin/env node
// ONNX Runtime (CPU execution provider, MLAS kernels) timing for bench/ort_compare.sh.
//
//   node ort_bench.js MODEL.onnx [--threads=1[,2]] [--warmup=N] [--runs=M] [--shape=1,3,224,224]
//
// For each thread count: one InferenceSession with intraOpNumThreads=T, interOpNumThreads=1,
// executionMode 'sequential', graphOptimizationLevel 'all'; N warm-up runs, then M timed runs of
// session.run() on one seeded random input (the same tensor every run). Prints one JSON object per
// line: {"threads", "median_ms", "fps" (= 1000 / median_ms), "min_ms", "max_ms", "cpu_per_wall",
// "load_ms", ...}. Pinning is the caller's job (taskset -c 0 for 1 thread, -c 0-1 for 2);
// cpu_per_wall (process CPU time / wall time over the timed runs) shows how many cores it got.
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
  const opts = {model: null, threads: [1], warmup: 5, runs: 20, shape: null};
  for (const a of argv) {
    const m = /^--([a-z]+)=(.*)$/.exec(a);
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
  const shape = inputShape(session, opts);
  const count = shape.reduce((a, b) => a * b, 1);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', seededInput(count, 12345), shape)};

  let checksum = 0;
  for (let i = 0; i < opts.warmup; ++i) await session.run(feeds);
  const times = [];
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  for (let i = 0; i < opts.runs; ++i) {
    const t0 = process.hrtime.bigint();
    const out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (i === opts.runs - 1) {
      const y = out[session.outputNames[0]].data;
      for (let j = 0; j < y.length; ++j) checksum += y[j];
    }
  }
  const wallUs = Number(process.hrtime.bigint() - wall0) / 1e3;
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
