import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadFromExposition, parseExposition } from './backend-metrics.ts';

const vllm = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:num_requests_waiting{model_name="m"} 4
vllm:kv_cache_usage_perc{model_name="m"} 0.25
vllm:prefix_cache_queries_total{model_name="m"} 1000
vllm:prefix_cache_hits_total{model_name="m"} 250
vllm:num_preemptions_total{model_name="m"} 7
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 12
`;

test('vLLM exposition: summed over label sets, prefix hit rate from queries and hits', () => {
  assert.deepEqual(loadFromExposition(vllm, 5), {
    ready: true,
    running: 5,
    waiting: 4,
    kvUsage: 0.25,
    prefixHitRate: 0.25,
    preemptions: 7,
    atMs: 5,
  });
});

test('SGLang names and the older vLLM cache gauge are understood', () => {
  const sglang = 'sglang:num_running_reqs 2\nsglang:num_queue_reqs 1\nsglang:token_usage 0.5\n';
  assert.deepEqual(
    [loadFromExposition(sglang, 0)?.running, loadFromExposition(sglang, 0)?.kvUsage],
    [2, 0.5],
  );
  const old =
    'vllm:num_requests_running 1\nvllm:num_requests_waiting 0\nvllm:gpu_cache_usage_perc 0.9\n';
  assert.equal(loadFromExposition(old, 0)?.kvUsage, 0.9);
});

test("data-parallel engines: counts summed, KV usage their mean; vLLM 0.8's prefix names", () => {
  const dp = [
    'vllm:num_requests_running{engine="0",model_name="m"} 3',
    'vllm:num_requests_running{engine="1",model_name="m"} 2',
    'vllm:num_requests_waiting{engine="0",model_name="m"} 1',
    'vllm:num_requests_waiting{engine="1",model_name="m"} 0',
    'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.6',
    'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5',
    'vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 400',
    'vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 100',
    '',
  ].join('\n');
  const load = loadFromExposition(dp, 0);
  assert.deepEqual(
    [load?.running, load?.waiting, load?.kvUsage, load?.prefixHitRate],
    [5, 1, 0.55, 0.25],
    'not 1.1, capped to a full cache',
  );
});

test("the KV cache a backend holds: vLLM's cache_config_info blocks, SGLang's token count", () => {
  const busy = 'vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n';
  const info = (engine: number, blocks: string) =>
    `vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="${engine}",gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="${blocks}",swap_space_bytes="4294967296"} 1.0\n`;
  const kv = (text: string) => loadFromExposition(text, 0)?.kvCapacityTokens;
  assert.equal(kv(busy + info(0, '27065')), 27_065 * 16);
  assert.equal(
    kv(busy + info(0, '1000') + info(1, '1000')),
    32_000,
    'data-parallel engines: summed',
  );
  assert.equal(kv(busy + info(0, 'None')), undefined, 'not yet sized');
  assert.equal(kv(busy + info(0, '1000') + info(1, 'None')), undefined, 'one not yet sized');
  assert.equal(kv(busy), undefined, 'said nowhere');
  const sglang = 'sglang:num_running_reqs 2\nsglang:num_queue_reqs 1\n';
  assert.equal(kv(`${sglang}sglang:max_total_num_tokens{model_name="m"} 161721.0\n`), 161_721);
  assert.equal(kv(`${sglang}sglang:max_total_num_tokens{model_name="m"} -1\n`), undefined);
});

test("TGI's and llama.cpp's names are understood: a backend of either is ready", () => {
  const tgi = [
    '# TYPE tgi_batch_current_size gauge',
    'tgi_batch_current_size 3',
    '# TYPE tgi_queue_size gauge',
    'tgi_queue_size 2',
    'tgi_batch_current_max_tokens 4096',
  ].join('\n');
  const t = loadFromExposition(tgi, 5);
  assert.deepEqual([t?.ready, t?.running, t?.waiting, t?.kvUsage], [true, 3, 2, 0]);
  const llama = [
    '# HELP llamacpp:requests_processing Number of requests processing.',
    'llamacpp:requests_processing 1',
    'llamacpp:requests_deferred 4',
    'llamacpp:kv_cache_usage_ratio 0.25',
  ].join('\n');
  const l = loadFromExposition(llama, 5);
  assert.deepEqual([l?.ready, l?.running, l?.waiting, l?.kvUsage], [true, 1, 4, 0.25]);
  // Current llama.cpp builds no longer export the KV ratio: still a load.
  const current = 'llamacpp:requests_processing 0\nllamacpp:requests_deferred 0\n';
  assert.equal(loadFromExposition(current, 5)?.ready, true);
});

test('no running/waiting gauges means no load; junk lines are skipped', () => {
  assert.equal(loadFromExposition('up 1\n', 0), undefined);
  const sums = parseExposition('bad line\nx{a="}"} 2\nx 3 1700000000\ny NaN\n');
  assert.equal(sums.get('x')?.sum, 5);
  assert.equal(sums.has('y'), false);
});

test("vLLM's lora_requests_info: the adapters running and max_lora, from the latest sample", () => {
  const text = `${vllm}vllm:lora_requests_info{max_lora="4",running_lora_adapters="a",waiting_lora_adapters=""} 100
vllm:lora_requests_info{max_lora="4",running_lora_adapters="a,b",waiting_lora_adapters="c"} 200
`;
  const load = loadFromExposition(text, 0);
  assert.deepEqual([load?.loras, load?.maxLoras], [['a', 'b'], 4]);
  const noMax = `${vllm}vllm:lora_requests_info{running_lora_adapters=""} 1\n`;
  assert.deepEqual(
    [loadFromExposition(noMax, 0)?.loras, loadFromExposition(noMax, 0)?.maxLoras],
    [[], undefined],
  );
});

test('running or waiting below 0 is no load: a broken exporter is not read as an idle backend', () => {
  const at = 1;
  assert.equal(
    loadFromExposition('vllm:num_requests_running -1\nvllm:num_requests_waiting 0\n', at),
    undefined,
  );
  assert.equal(
    loadFromExposition('vllm:num_requests_running 0\nvllm:num_requests_waiting -5\n', at),
    undefined,
  );
  assert.equal(
    loadFromExposition('vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n', at)?.ready,
    true,
  );
});
