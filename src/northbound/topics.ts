// Sparkplug topics (Sparkplug 3.0 §4.1: namespace/group_id/message_type/edge_node_id/[device_id],
// namespace spBv1.0), made once per edge node and once per device instead of per message.

export const NAMESPACE = "spBv1.0";

export interface NodeTopics {
  readonly nbirth: string;
  readonly ndeath: string;
  readonly ndata: string;
  readonly ncmd: string;
  /** DCMD topics start with this; the device id follows (§4.2.2.4). */
  readonly dcmdPrefix: string;
}

export interface DeviceTopics {
  readonly dbirth: string;
  readonly ddata: string;
  readonly ddeath: string;
}

export function nodeTopics(groupId: string, edgeNodeId: string): NodeTopics {
  const t = (type: string) => `${NAMESPACE}/${groupId}/${type}/${edgeNodeId}`;
  return { nbirth: t("NBIRTH"), ndeath: t("NDEATH"), ndata: t("NDATA"), ncmd: t("NCMD"), dcmdPrefix: `${t("DCMD")}/` };
}

/** The device topics of one edge node, kept per device name. */
export class DeviceTopicCache {
  private readonly byName = new Map<string, DeviceTopics>();

  constructor(
    private readonly groupId: string,
    private readonly edgeNodeId: string,
  ) {}

  of(device: string): DeviceTopics {
    let t = this.byName.get(device);
    if (t === undefined) {
      const d = (type: string) => `${NAMESPACE}/${this.groupId}/${type}/${this.edgeNodeId}/${device}`;
      t = { dbirth: d("DBIRTH"), ddata: d("DDATA"), ddeath: d("DDEATH") };
      this.byName.set(device, t);
    }
    return t;
  }

  forget(device: string): void {
    this.byName.delete(device);
  }
}
