/**
 * The gateway's operational log: start, backends and the shared store going up or down, circuit
 * breakers changing state, the drain, anything unexpected. One JSON line per event through pino,
 * the logger the decision log uses, with the event's fields beside `msg` so a log pipeline can
 * filter on them (`backend`, `state`, `cause`…). Request traffic never goes here: every request
 * has its decision record instead.
 */
import { pino } from 'pino';

export interface OpsLog {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

/** JSON lines on stdout, written synchronously: they are few, and none may be lost at exit. */
export function stdoutOpsLog(): OpsLog {
  return pino(
    { base: { pid: process.pid, name: 'goodput' } },
    pino.destination({ dest: 1, sync: true }),
  );
}

/** Logs nothing: for in-process gateways whose host does not want the lines. */
export const SILENT_OPS_LOG: OpsLog = { info() {}, warn() {}, error() {} };

/** Keeps every line: tests read what was logged. */
export function memoryOpsLog(): OpsLog & {
  readonly lines: { level: string; msg: string; fields: Record<string, unknown> }[];
} {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) =>
    void lines.push({ level, msg, fields });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}
