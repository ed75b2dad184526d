// Limits that the services enforce and that ServerCapabilities publishes. The config
// (src/config) supplies them; these defaults apply when a caller builds a server without one.

export interface ServiceLimits {
  maxSessions: number;
  minSessionTimeout: number;
  maxSessionTimeout: number;
  maxBrowseContinuationPoints: number;
  maxNodesPerRead: number;
  maxNodesPerWrite: number;
  maxNodesPerBrowse: number;
  maxNodesPerTranslateBrowsePathsToNodeIds: number;
  maxNodesPerRegisterNodes: number;
  /** OperationLimits.MaxNodesPerMethodCall (Part 5 §6.3.11): methods in one Call request. */
  maxNodesPerMethodCall: number;
  maxBrowsePathElements: number;
  maxReferencesPerNode: number;
  maxStringLength: number;
  maxByteStringLength: number;
  maxArrayLength: number;
}

export const DEFAULT_SERVICE_LIMITS: Readonly<ServiceLimits> = Object.freeze({
  maxSessions: 100,
  minSessionTimeout: 10_000,
  maxSessionTimeout: 3_600_000,
  maxBrowseContinuationPoints: 10,
  maxNodesPerRead: 10_000,
  maxNodesPerWrite: 10_000,
  maxNodesPerBrowse: 1_000,
  maxNodesPerTranslateBrowsePathsToNodeIds: 1_000,
  maxNodesPerRegisterNodes: 1_000,
  maxNodesPerMethodCall: 100,
  maxBrowsePathElements: 64,
  maxReferencesPerNode: 1_000,
  maxStringLength: 1 << 20,
  maxByteStringLength: 16 << 20,
  maxArrayLength: 1_000_000,
});
