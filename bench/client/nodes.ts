// The nodes a load reads, named in text: `i=2258`, `ns=2;s=Scalar.Int32`, or by namespace URI
// `nsu=urn:fieldgate:test;s=Scalar.Int32` (resolved through the server's NamespaceArray, whose
// indexes are the server's to choose).
import { BuiltinType, numericNodeId, type DataValue, type NodeId } from "../../src/ua/builtins.js";
import { TimestampsToReturn } from "../../src/ua/generated/enums.js";
import { AttributeIds, ObjectIds, VariableIds } from "../../src/ua/generated/node-ids.js";
import { statusCodeName } from "../../src/ua/generated/status-codes.js";
import { decodeReadResponse, encodeReadRequest, type ReadValueId } from "../../src/ua/generated/types.js";
import { parseNodeId } from "../../src/ua/node-id.js";
import { LoadClientError, type UaClientChannel } from "./channel.js";

/** Server_ServerStatus_CurrentTime: exists on every server, changes on every read. */
export const DEFAULT_READ_NODE = `i=${VariableIds.Server_ServerStatus_CurrentTime}`;

export function valueReadOf(nodeId: NodeId): ReadValueId {
  return {
    nodeId,
    attributeId: AttributeIds.Value,
    indexRange: undefined,
    dataEncoding: { namespaceIndex: 0, name: "" },
  };
}

/** Reads with the full decoder; used for the few set-up reads, never under load. */
export async function readValues(channel: UaClientChannel, nodes: readonly ReadValueId[]): Promise<DataValue[]> {
  const response = await channel.call(
    "Read",
    ObjectIds.ReadRequest_Encoding_DefaultBinary,
    encodeReadRequest,
    {
      requestHeader: channel.requestHeader(),
      maxAge: 0,
      timestampsToReturn: TimestampsToReturn.Both,
      nodesToRead: [...nodes],
    },
    ObjectIds.ReadResponse_Encoding_DefaultBinary,
    decodeReadResponse,
  );
  return response.results ?? [];
}

/** Parses the node texts, resolving `nsu=` through the server's NamespaceArray. */
export async function resolveNodes(channel: UaClientChannel, texts: readonly string[]): Promise<NodeId[]> {
  let namespaces: string[] | undefined;
  const out: NodeId[] = [];
  for (const text of texts) {
    if (!text.startsWith("nsu=")) {
      out.push(parseNodeId(text));
      continue;
    }
    const semi = text.indexOf(";");
    if (semi < 0) throw new LoadClientError("EPROTOCOL", `${text}: namespace URI without identifier`);
    const uri = decodeURIComponent(text.slice(4, semi));
    if (namespaces === undefined) {
      const [array] = await readValues(channel, [valueReadOf(numericNodeId(VariableIds.Server_NamespaceArray))]);
      const v = array?.value;
      if (!v || v.dataType !== BuiltinType.String || !Array.isArray(v.value)) {
        throw new LoadClientError("EPROTOCOL", "the server's NamespaceArray is not a String array");
      }
      namespaces = v.value as string[];
    }
    const index = namespaces.indexOf(uri);
    if (index < 0) throw new LoadClientError("EPROTOCOL", `namespace ${uri} is not in the server's NamespaceArray`);
    const local = parseNodeId(text.slice(semi + 1));
    out.push({ ...local, namespace: index });
  }
  return out;
}

/** One fully decoded Read of the load's nodes: every result must be Good before the load starts. */
export async function checkReadable(channel: UaClientChannel, nodes: readonly ReadValueId[], texts: readonly string[]): Promise<void> {
  const results = await readValues(channel, nodes);
  if (results.length !== nodes.length) {
    throw new LoadClientError("ESERVICE", `Read returned ${results.length} results for ${nodes.length} nodes`);
  }
  for (let i = 0; i < results.length; i++) {
    const status = results[i].statusCode ?? 0;
    if (status >>> 30 !== 0) {
      throw new LoadClientError("ESERVICE", `Read of ${texts[i % texts.length]}: ${statusCodeName(status)}`, status);
    }
  }
}
