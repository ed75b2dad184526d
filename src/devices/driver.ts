// The one interface every device driver implements (DESIGN: Devices). Drivers live in drivers/
// and import nothing from the server but this file and src/ua types. Poll groups call them;
// they know nothing of OPC UA nodes.

/** Modbus data areas; other fieldbus drivers map their objects onto the same four. */
export type DataArea = "coil" | "discrete" | "input" | "holding";

/** One contiguous block request: bits for coil/discrete, 16-bit registers for input/holding. */
export interface BlockRequest {
  readonly unitId: number;
  readonly area: DataArea;
  readonly start: number;
  readonly count: number;
}

/**
 * A driver failure of one request. `statusCode` is the OPC UA StatusCode the affected values
 * take (e.g. BadCommunicationError for a time-out, BadConfigurationError for Modbus exception 02
 * illegal address, BadDeviceFailure for 04); `retryable` says whether backing off and retrying
 * can help (06 busy, time-outs) or not (02 illegal address).
 */
export class DriverError extends Error {
  readonly statusCode: number;
  readonly retryable: boolean;
  /** The Modbus exception code when the device answered with one. */
  readonly exceptionCode: number | undefined;
  constructor(statusCode: number, message: string, retryable: boolean, exceptionCode?: number) {
    super(message);
    this.name = "DriverError";
    this.statusCode = statusCode;
    this.retryable = retryable;
    this.exceptionCode = exceptionCode;
  }
}

export interface DriverHealth {
  readonly connected: boolean;
  readonly requests: number;
  readonly errors: number;
  readonly lastError: string | undefined;
  /** Round-trip time of the last successful request, ms. */
  readonly lastRoundTrip: number | undefined;
}

export interface Driver {
  /** Opens the link (TCP connection, serial port). Rejects with DriverError. Idempotent. */
  connect(): Promise<void>;
  /** Reads one block: registers as a Uint16Array, bits as a Uint8Array of 0/1. */
  readBlock(request: BlockRequest): Promise<Uint16Array | Uint8Array>;
  /**
   * Writes registers (holding) or bits (coil) from `start`. The driver picks the function code
   * (Modbus: FC5/FC6 for one, FC15/FC16 for more, unless configured to force FC6).
   */
  write(unitId: number, area: "coil" | "holding", start: number, values: Uint16Array | Uint8Array): Promise<void>;
  close(): Promise<void>;
  health(): DriverHealth;
}
