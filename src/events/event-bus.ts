// Where raised events go (Part 3 §7.16-§7.18, Part 4 §5.12.1: an event monitored item listens
// on an Object whose EventNotifier has SubscribeToEvents). The notifiers of the gateway, each
// one's area inside the one before:
//
//   Server (i=2253)  >  Objects/Devices  >  <device>
//
// An event is raised with the notifiers it is reported through, the Server always among them
// (Part 5 §6.3.1: the Server object is the notifier of every event). The hierarchy is not shown
// as HasNotifier references (device-namespace.ts says why). Sources ask `wants` first: with
// nobody listening, no event is built at all.
import type { NodeId } from "../ua/builtins.js";
import { nodeIdKey } from "../ua/node-id.js";
import type { UaEvent } from "./event.js";
import type { EventItem } from "./event-item.js";

export class EventBus {
  private readonly byNotifier = new Map<string | number, Set<EventItem>>();
  private itemCount = 0;
  /** Events raised since start, with someone listening. */
  raised = 0;

  get size(): number {
    return this.itemCount;
  }

  /** Whether any item listens on one of these notifiers. */
  wants(notifiers: readonly NodeId[]): boolean {
    if (this.itemCount === 0) return false;
    for (const n of notifiers) if (this.byNotifier.has(nodeIdKey(n))) return true;
    return false;
  }

  attach(item: EventItem): void {
    let set = this.byNotifier.get(item.notifierKey);
    if (set === undefined) this.byNotifier.set(item.notifierKey, (set = new Set()));
    if (!set.has(item)) {
      set.add(item);
      this.itemCount++;
    }
  }

  detach(item: EventItem): void {
    const set = this.byNotifier.get(item.notifierKey);
    if (set === undefined || !set.delete(item)) return;
    this.itemCount--;
    if (set.size === 0) this.byNotifier.delete(item.notifierKey);
  }

  /** Every item on a notifier (ConditionRefresh reaches them all). */
  itemsOn(notifier: NodeId): readonly EventItem[] {
    return [...(this.byNotifier.get(nodeIdKey(notifier)) ?? [])];
  }

  /** Hands the event to every item on its notifiers; an item listens on one notifier, so it sees it once. */
  raise(event: UaEvent, notifiers: readonly NodeId[]): void {
    if (this.itemCount === 0) return;
    let any = false;
    for (const n of notifiers) {
      const set = this.byNotifier.get(nodeIdKey(n));
      if (set === undefined) continue;
      any = true;
      for (const item of set) item.offer(event);
    }
    if (any) this.raised++;
  }
}
