// How long an exchange on an M-Bus takes at a bus speed (EN 13757-2; The M-Bus documentation
// §5.1 and §5.4): a character is 11 bits (start, 8 data bits, even parity, stop), a slave starts
// its answer 11 bit times to 330 bit times + 50 ms after the request's last character, and a
// telegram is at most 261 characters (a long frame of 255 bytes in L). The link waits for an
// answer's first character that long after its request went out, plus an allowance for the
// converter and the operating system; a read's worst case is what the device map's rate is
// checked against (protocol.ts).
import { MAX_FRAME } from "./frame.js";

/** Bits a character takes on the bus (EN 13757-2: 8E1). */
export const CHARACTER_BITS = 11;
/** A slave's latest start of an answer: 330 bit times and 50 ms after the request (EN 13757-2). */
const ANSWER_BITS = 330;
const ANSWER_MS = 50;
/** Characters of a short frame (SND_NKE, REQ_UD2) and of a selection (a long frame of 8 data bytes). */
const SHORT = 5;
const SELECTION = 17;

/** Transmission time of `chars` characters, ms. */
export function charsTime(chars: number, baudRate: number): number {
  return (chars * CHARACTER_BITS * 1000) / baudRate;
}

/** The latest a slave starts its answer after the end of a request, ms (EN 13757-2). */
export function answerWindow(baudRate: number): number {
  return (ANSWER_BITS * 1000) / baudRate + ANSWER_MS;
}

/**
 * The wait for the first character of an answer, ms: the request's own transmission, the
 * slave's answer window, and `allowance` for what sits between (a USB level converter's latency,
 * a TCP converter's network).
 */
export function firstCharacterTimeout(requestChars: number, baudRate: number, allowance: number): number {
  return Math.ceil(charsTime(requestChars, baudRate) + answerWindow(baudRate) + allowance);
}

/** Silence after a character that ends an answer cut short, ms: ten characters, and the allowance. */
export function characterGap(baudRate: number, allowance: number): number {
  return Math.ceil(charsTime(10, baudRate) + allowance);
}

/**
 * The longest one read of a meter takes on the bus, ms, when every answer comes at the latest:
 * its SND_NKE (primary address) or selection (secondary) and single-character ACK, then
 * `telegrams` REQ_UD2 each answered with a telegram of the longest length.
 */
export function worstReadTime(baudRate: number, telegrams: number, secondary: boolean): number {
  const opening = charsTime(secondary ? SELECTION : SHORT, baudRate) + answerWindow(baudRate) + charsTime(1, baudRate);
  const telegram = charsTime(SHORT, baudRate) + answerWindow(baudRate) + charsTime(MAX_FRAME, baudRate);
  return opening + telegrams * telegram;
}

export const REQUEST_CHARS = { short: SHORT, selection: SELECTION } as const;
