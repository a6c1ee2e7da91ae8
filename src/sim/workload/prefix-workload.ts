/**
 * A prefix-heavy request stream, for routing: the prompts share prefixes the way production
 * traffic does, and every request carries the chained block hashes of its prompt
 * (`PrefixBlocks`), so engines reuse cached blocks and routers can see locality. Four kinds of
 * request, mixed by `--prefix chat:W,hot:W,docs:W,agent:W` (`mix` = chat:0.4,hot:0.2,docs:0.2,agent:0.2):
 *
 * - **chat**: multi-turn sessions. A session opens with one of 8 system prompts shared across
 *   tenants (400–1,600 tokens, Zipf 1.0), and each turn resends the whole history — system
 *   prompt, every earlier user message and reply — plus a new user message (exp. mean 150
 *   tokens). An arrival continues an open session with probability 0.75 (chosen uniformly among
 *   the 512 most recently active), else opens one; a session closes after 8 turns or past
 *   12,000 prompt tokens. Requests carry the session's id (`session`).
 * - **hot**: one of 4 hot prefixes (3,000 tokens; Zipf 1.5, so the first draws ≈ 60% of them — a
 *   popular document or agent preamble) and a question (exp. mean 100).
 * - **docs**: one of 64 long documents (6,000–20,000 tokens, Zipf 0.8) and a question: document
 *   QA on a long-context model.
 * - **agent**: one very hot 6,000-token preamble (an agent framework's instructions and tool
 *   specs, the same for every call) and a task context of its own (exp. mean 1,500 tokens): most
 *   of each prompt is shared, yet each brings real prefill work.
 *
 * Outputs come from `--output`; `--input` is not used (the structure above sets the prompts).
 * A prompt's blocks are 16 tokens; block j's hash covers every token up to its end, so two
 * prompts share hash j exactly when they share their first 16 (j + 1) tokens. Deterministic:
 * each aspect draws from its own stream.
 */
import type { Rng } from '../../core/ports/rng.ts';
import type { LlmRequest, PrefixBlocks } from '../../core/request/request.ts';
import type { SloClassName } from '../../core/request/slo-classes.ts';
import type { Tokens } from '../../core/request/units.ts';
import { ConfigError } from '../../core/errors.ts';
import { arrivalClock, type ArrivalProcess } from './arrivals.ts';
import { classSampler, type ClassSpec } from './class-spec.ts';
import { lengthSampler, type LengthTables } from './length-draw.ts';
import type { LengthSpec } from './length-spec.ts';
import { requestId } from './request-id.ts';
import { WORKLOAD_STREAMS as S } from './streams.ts';
import { tenantSampler, type TenantSpec } from './tenant-spec.ts';
import { exponentialSampler, zipfSampler } from './variates.ts';

export const PREFIX_BLOCK_TOKENS = 16;

export interface PrefixMix {
  readonly chat: number;
  readonly hot: number;
  readonly docs: number;
  readonly agent: number;
}

const KINDS = ['chat', 'hot', 'docs', 'agent'] as const;
export const DEFAULT_PREFIX_MIX: PrefixMix = { chat: 0.4, hot: 0.2, docs: 0.2, agent: 0.2 };

const SYSTEM_PROMPTS = 8;
const CONTINUE = 0.75;
const OPEN_SESSIONS = 512;
const MAX_TURNS = 8;
const MAX_SESSION_TOKENS = 12_000;
const HOT_PREFIXES = 4;
const HOT_TOKENS = 3_000;
const HOT_ZIPF = 1.5;
const DOCUMENTS = 64;
const DOC_ZIPF = 0.8;
const AGENT_TOKENS = 6_000;

/** `mix`, or `chat:W,hot:W,docs:W,agent:W` (any of them, weights ≥ 0, not all 0). */
export function parsePrefixMix(text: string, option = '--prefix'): PrefixMix {
  const expected =
    '`mix` or weights like `chat:0.6,hot:0.3,docs:0.1` (chat, hot, docs, agent; ≥ 0)';
  if (text === 'mix') return DEFAULT_PREFIX_MIX;
  const mix: Record<string, number> = { chat: 0, hot: 0, docs: 0, agent: 0 };
  for (const part of text.split(',')) {
    const [name, w, ...rest] = part.split(':');
    const weight = Number(w);
    if (rest.length > 0 || !(name in mix) || !Number.isFinite(weight) || weight < 0) {
      throw new ConfigError(option, expected, text);
    }
    mix[name] = weight;
  }
  const total = mix.chat + mix.hot + mix.docs + mix.agent;
  if (total <= 0) throw new ConfigError(option, expected, text);
  return {
    chat: mix.chat / total,
    hot: mix.hot / total,
    docs: mix.docs / total,
    agent: mix.agent / total,
  };
}

export function formatPrefixMix(m: PrefixMix): string {
  return KINDS.map((k) => `${k}:${+m[k].toFixed(4)}`).join(',');
}

export interface PrefixPlan {
  readonly arrivals: ArrivalProcess;
  readonly mix: PrefixMix;
  readonly output: LengthSpec;
  readonly tenants: TenantSpec;
  readonly classes: ClassSpec;
  readonly tables?: LengthTables;
}

export function prefixRequests(plan: PrefixPlan, rng: Rng): Iterable<LlmRequest> {
  return { [Symbol.iterator]: () => generate(plan, rng) };
}

/**
 * A prompt as it grows: the chained hashes of its full blocks, and the state of the block
 * being filled. Token i of a segment is named by (segment id, i); a block's hash folds its
 * tokens' names into the previous block's hash (two 32-bit FNV-style lanes).
 */
class PromptBuilder {
  readonly hashes: string[] = [];
  tokens = 0;
  private a = 0x811c9dc5;
  private b = 0x01000193;

  /** Appends `length` tokens of segment `id` (a number unique to its content). */
  append(id: number, length: Tokens): void {
    for (let i = 0; i < length; i++) {
      this.a = Math.imul(this.a ^ id, 0x01000193) ^ i;
      this.b = Math.imul(this.b ^ i, 0x5bd1e995) ^ id;
      if (++this.tokens % PREFIX_BLOCK_TOKENS === 0) {
        this.a = Math.imul(this.a ^ (this.a >>> 15), 0x2c1b3c6d);
        this.b = Math.imul(this.b ^ (this.b >>> 13), 0x297a2d39);
        this.hashes.push(`${(this.a >>> 0).toString(36)}.${(this.b >>> 0).toString(36)}`);
      }
    }
  }

  copy(): PromptBuilder {
    const c = new PromptBuilder();
    c.hashes.push(...this.hashes);
    c.tokens = this.tokens;
    c.a = this.a;
    c.b = this.b;
    return c;
  }

  blocks(): PrefixBlocks {
    return { blockTokens: PREFIX_BLOCK_TOKENS, hashes: this.hashes.slice() };
  }
}

interface Session {
  readonly id: string;
  readonly tenant: string;
  readonly prompt: PromptBuilder;
  turns: number;
}

function* generate(plan: PrefixPlan, rng: Rng): Generator<LlmRequest> {
  const nextArrival = arrivalClock(plan.arrivals, () => rng.fork(S.arrivals));
  const shape = rng.fork(S.prefixShape);
  const pick = rng.fork(S.prefixPick);
  const outputOf = lengthSampler(
    plan.output,
    rng.fork(S.outputLengths),
    plan.output.kind === 'table' ? plan.tables?.[plan.output.name]?.output : undefined,
  );
  const tenant = tenantSampler(plan.tenants, rng.fork(S.tenants));
  const sloClass: () => SloClassName = classSampler(plan.classes, rng.fork(S.classes));
  const userTokens = exponentialSampler(shape, 150);
  const questionTokens = exponentialSampler(shape, 100);
  const taskTokens = exponentialSampler(shape, 1_500);
  // Fixed content: system prompts, hot prefixes and documents, each a prompt of its own.
  const fixed = (count: number, length: () => number, first: number) =>
    Array.from({ length: count }, (_, k) => {
      const p = new PromptBuilder();
      p.append(first + k, length());
      return p;
    });
  const systems = fixed(SYSTEM_PROMPTS, () => 400 + Math.floor(shape.next() * 1_201), 1);
  const hot = fixed(HOT_PREFIXES, () => HOT_TOKENS, 101);
  const docs = fixed(DOCUMENTS, () => 6_000 + Math.floor(shape.next() * 14_001), 201);
  const agent = fixed(1, () => AGENT_TOKENS, 301)[0];
  const systemOf = zipfSampler(SYSTEM_PROMPTS, 1.0, pick);
  const hotOf = zipfSampler(HOT_PREFIXES, HOT_ZIPF, pick);
  const docOf = zipfSampler(DOCUMENTS, DOC_ZIPF, pick);
  // Segment ids past the fixed content's are unique to one message.
  let nextSegment = 1_000;
  const open: Session[] = [];
  let sessions = 0;
  for (let i = 1; i <= plan.arrivals.count; i++) {
    const arrivalMs = nextArrival();
    const u = pick.next();
    const m = plan.mix;
    const kind =
      u < m.chat
        ? 'chat'
        : u < m.chat + m.hot
          ? 'hot'
          : u < m.chat + m.hot + m.docs
            ? 'docs'
            : 'agent';
    const outputTokens = outputOf();
    const common = { id: requestId(i), arrivalMs, outputTokens, sloClass: sloClass() };
    if (kind === 'chat') {
      let s: Session;
      if (open.length > 0 && pick.next() < CONTINUE) {
        s = open[Math.floor(pick.next() * open.length)];
      } else {
        s = {
          id: `s${++sessions}`,
          tenant: tenant(),
          prompt: systems[systemOf()].copy(),
          turns: 0,
        };
        open.push(s);
        if (open.length > OPEN_SESSIONS) open.shift();
      }
      s.prompt.append(nextSegment++, Math.max(1, Math.round(userTokens())));
      const request: LlmRequest = {
        ...common,
        inputTokens: s.prompt.tokens,
        tenant: s.tenant,
        session: s.id,
        prefix: s.prompt.blocks(),
      };
      // The reply joins the history the next turn resends.
      s.prompt.append(nextSegment++, outputTokens);
      if (++s.turns >= MAX_TURNS || s.prompt.tokens > MAX_SESSION_TOKENS) {
        open.splice(open.indexOf(s), 1);
      }
      yield request;
      continue;
    }
    if (kind === 'agent') {
      const p = agent.copy();
      p.append(nextSegment++, Math.max(1, Math.round(taskTokens())));
      yield { ...common, inputTokens: p.tokens, tenant: tenant(), prefix: p.blocks() };
      continue;
    }
    const p = (kind === 'hot' ? hot[hotOf()] : docs[docOf()]).copy();
    p.append(nextSegment++, Math.max(1, Math.round(questionTokens())));
    yield { ...common, inputTokens: p.tokens, tenant: tenant(), prefix: p.blocks() };
  }
}
