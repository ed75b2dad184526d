// The secure channel's side of responses that leave over several turns (SecureChannel.respond,
// transport/output-slicer.ts): how one went, and a response that waits behind one. Objects of
// these are made only for a response that slices or waits, not for every response. The channel
// is a type parameter C (SecureChannel, which imports this module).
import type { BinaryWriter } from "../ua/binary-writer.js";
import type { QueuedSend, SlicedMessage } from "../transport/output-slicer.js";

/** How SecureChannel.write went. */
export const enum Sent {
  Whole = 0,
  /** Not sent (the channel is closed) or cut off by an abort chunk. */
  Lost = 1,
  /** Complete, its lent bytes being laid out: the slicer tells how it ends. */
  Pending = 2,
}

/**
 * What the sender of a response hears (one object per kind of sender, not per response: the
 * dispatcher has one per service).
 */
export interface ResponseHooks<T, C> {
  /**
   * The bytes of `value` are no longer needed: the response went out whole (true), or was cut
   * off by an abort chunk, refused, or dropped with its channel (false). Called once.
   */
  sent(value: T, whole: boolean): void;
  /** Nothing of it went out (over the client's limits, no memory, the encoder failed): the sender may answer otherwise. */
  refused(channel: C, requestId: number, value: T, err: unknown): void;
}

/** What a queued response needs of its channel: to be sent once the writer is free. */
export interface ResponseChannel<C> {
  respondNow<T>(requestId: number, encodingId: number, encode: (w: BinaryWriter, v: T) => void, value: T, hooks: ResponseHooks<T, C>): void;
}

/** A response being laid out in slices. */
export class SlicedResponse<T, C> implements SlicedMessage {
  constructor(
    private readonly channel: C,
    private readonly requestId: number,
    private readonly value: T,
    private readonly hooks: ResponseHooks<T, C>,
  ) {}

  finished(whole: boolean): void {
    this.hooks.sent(this.value, whole);
  }

  refused(err: unknown): void {
    this.hooks.refused(this.channel, this.requestId, this.value, err);
  }
}

/** A response that came while another was being laid out: encoded once the writer is free. */
export class QueuedResponse<T, C extends ResponseChannel<C>> implements QueuedSend {
  constructor(
    private readonly channel: C,
    private readonly requestId: number,
    private readonly encodingId: number,
    private readonly encode: (w: BinaryWriter, v: T) => void,
    private readonly value: T,
    private readonly hooks: ResponseHooks<T, C>,
  ) {}

  send(): void {
    this.channel.respondNow(this.requestId, this.encodingId, this.encode, this.value, this.hooks);
  }

  drop(): void {
    this.hooks.sent(this.value, false);
  }
}
