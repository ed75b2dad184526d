// Limits that the services enforce and that ServerCapabilities publishes. The config
// (src/config) supplies them, its defaults included.

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
