// Faults that end a request or a channel carry a StatusCode (STYLE: a failed operation is a
// StatusCode in its result slot; only faults that end something are thrown, with this class).
import { StatusCodes, statusCodeName } from "./generated/status-codes.js";

export class UaStatusError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message?: string) {
    super(message ? `${statusCodeName(statusCode)}: ${message}` : statusCodeName(statusCode));
    this.name = "UaStatusError";
    this.statusCode = statusCode;
  }
}

/** Decoding untrusted bytes failed (Part 6 §5.1: any malformed input is BadDecodingError). */
export function decodingError(message: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadDecodingError, message);
}

/** A value does not fit its type: it ends the one message being encoded, never the process. */
export function encodingError(message: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadEncodingError, message);
}

export function encodingLimitsError(message: string): UaStatusError {
  return new UaStatusError(StatusCodes.BadEncodingLimitsExceeded, message);
}

/** The StatusCode of any thrown value: its own for UaStatusError, BadInternalError otherwise. */
export function statusOf(err: unknown): number {
  return err instanceof UaStatusError ? err.statusCode : StatusCodes.BadInternalError;
}
