/**
 * Holds a stream's first tokens until its answer is chosen — the gateway must see the first token
 * (or a failure before it, which may go to another backend) before it commits to a response —
 * then hands every token straight to the answer.
 */
import type { Sent, TokenEvent, TokenSink } from '../backend.ts';

export class TokenRelay {
  private held: (readonly [TokenEvent, Sent | undefined])[] = [];
  private target: TokenSink | null = null;
  private firstSeen: () => void = () => {};
  /** Tokens that came through, held or handed on (a choice's finish is none). */
  count = 0;
  /** Resolves when the first token arrives. */
  readonly first = new Promise<void>((resolve) => (this.firstSeen = resolve));

  readonly sink: TokenSink = (token, sent) => {
    if (token.finish === undefined) this.count++;
    if (this.target !== null) return this.target(token, sent);
    this.held.push([token, sent]);
    this.firstSeen();
  };

  /** From now on tokens go to `target`, starting with those held. */
  drainTo(target: TokenSink): void {
    for (const [t, sent] of this.held) target(t, sent);
    this.held = [];
    this.target = target;
  }
}
