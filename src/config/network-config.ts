// The schema of network.yaml (the appliance's network settings, in /etc/fieldgate beside
// gateway.yaml): per port, DHCP or static IPv4/IPv6 addresses with their gateway and DNS
// servers, and the box's hostname, time servers and time zone. src/settings/network-render.ts
// turns a validated file into systemd-networkd and timesyncd files; every way of changing it
// (the FAT drive at boot, `fieldgate network try`, later the page) is checked here first.
//
// Decisions where the issue is silent:
// - A port is named by its interface name (a networkd glob such as en* is allowed) or by its
//   MAC address, never both: a MAC stays right when the kernel names the port differently.
// - `dhcp` defaults to yes for a port without addresses and to no for one with them; ports the
//   file does not list keep the image's default (DHCP, and a link-local address when no DHCP
//   server answers: image/rootfs/etc/systemd/network/20-wired.network).
// - `linkLocal` is the 169.254.x.x fallback; IPv6 link-local addresses (fe80::) are always on,
//   since IPv6 neighbour discovery needs them.
// - A gateway must lie in the network of one of the port's addresses (or come from DHCP): a
//   gateway that is not on the link is the usual typo that locks a box out.
import { BlockList, isIPv4, isIPv6 } from "node:net";
import { array, boolean, custom, object, optional, string, type Checker, type Infer, type ObjectValue, type ParseResult } from "./schema.js";
import { validateFile, validateYaml, type ConfigIssue } from "./load.js";
import { suggest, type ValidationResult } from "./validate.js";

export type DhcpMode = "yes" | "no" | "ipv4" | "ipv6";

/** An address with its prefix length, as written ("192.168.10.20/24", "fd00::20/64"). */
export interface Cidr {
  readonly address: string;
  readonly prefix: number;
  readonly family: 4 | 6;
  /** The text networkd is given: the address as written, "/", the prefix. */
  readonly text: string;
}

function parseCidr(raw: unknown): ParseResult<Cidr> {
  if (typeof raw !== "string") return { ok: false, message: "" };
  const text = raw.trim();
  const slash = text.lastIndexOf("/");
  if (slash < 0) {
    if (isIPv4(text)) return { ok: false, message: `add the prefix length, e.g. "${text}/24" (the network's size; 255.255.255.0 is /24)` };
    if (isIPv6(text)) return { ok: false, message: `add the prefix length, e.g. "${text}/64"` };
    return { ok: false, message: "" };
  }
  const address = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : 0;
  if (family === 0) return { ok: false, message: `"${address}" is not an IPv4 or IPv6 address` };
  if (family === 4 && isIPv4(prefixText)) {
    const bits = netmaskBits(prefixText);
    return { ok: false, message: bits === undefined ? `${prefixText} is not a netmask` : `write the netmask as a prefix length: "${address}/${bits}"` };
  }
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) < 1 || Number(prefixText) > max) {
    return { ok: false, message: `the prefix length must be 1 to ${max}, got "${prefixText}"` };
  }
  const why = unusable(address, family);
  if (why !== undefined) return { ok: false, message: why };
  const prefix = Number(prefixText);
  return { ok: true, value: { address, prefix, family, text: `${address}/${prefix}` } };
}

/** 255.255.255.0 -> 24; undefined for a mask whose ones are not contiguous. */
function netmaskBits(mask: string): number | undefined {
  const n = mask.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
  const bits = n.toString(2).padStart(32, "0");
  return /^1*0*$/.test(bits) ? bits.indexOf("0") < 0 ? 32 : bits.indexOf("0") : undefined;
}

/** Addresses no port can be given: why, or undefined when it can. */
function unusable(address: string, family: 4 | 6): string | undefined {
  const ranges = new BlockList();
  if (family === 4) {
    ranges.addSubnet("0.0.0.0", 8, "ipv4");
    ranges.addSubnet("127.0.0.0", 8, "ipv4");
    ranges.addSubnet("224.0.0.0", 3, "ipv4");
    return ranges.check(address, "ipv4") ? `${address} cannot be a port's address (0.x, 127.x, multicast and reserved addresses are not)` : undefined;
  }
  ranges.addAddress("::", "ipv6");
  ranges.addAddress("::1", "ipv6");
  ranges.addSubnet("ff00::", 8, "ipv6");
  return ranges.check(address, "ipv6") ? `${address} cannot be a port's address (::, ::1 and multicast addresses are not)` : undefined;
}

const cidr = custom<Cidr>({
  expected: 'an address with its prefix length, such as 192.168.10.20/24 or fd00::20/64',
  jsonSchema: { type: "string", pattern: "^[0-9A-Fa-f.:]+/\\d{1,3}$" },
  parse: parseCidr,
});

function ipAddress(family: 4 | 6 | 0, what: string) {
  const expectedText = family === 4 ? "an IPv4 address such as 192.168.10.1" : family === 6 ? "an IPv6 address such as fd00::1" : "an IPv4 or IPv6 address";
  return custom<string>({
    expected: expectedText,
    description: what,
    jsonSchema: { type: "string", minLength: 2 },
    parse: (raw) => {
      if (typeof raw !== "string") return { ok: false, message: "" };
      const t = raw.trim();
      const ok = family === 4 ? isIPv4(t) : family === 6 ? isIPv6(t) : isIPv4(t) || isIPv6(t);
      if (ok) return { ok: true, value: t };
      if (family === 4 && isIPv6(t)) return { ok: false, message: "an IPv6 gateway goes in gateway6" };
      if (family === 6 && isIPv4(t)) return { ok: false, message: "an IPv4 gateway goes in gateway" };
      if (t.includes("/")) return { ok: false, message: "a gateway or server is one address, without a prefix length" };
      return { ok: false, message: "" };
    },
  });
}

const DHCP_VALUES: Readonly<Record<string, DhcpMode>> = { yes: "yes", true: "yes", no: "no", false: "no", ipv4: "ipv4", ipv6: "ipv6" };

const dhcp = custom<DhcpMode>({
  expected: "yes, no, ipv4 or ipv6",
  description: "DHCP on this port: yes (IPv4 and IPv6), no (static addresses only), ipv4 or ipv6. Default: yes without addresses, no with them.",
  jsonSchema: { anyOf: [{ type: "boolean" }, { enum: ["yes", "no", "ipv4", "ipv6"] }] },
  parse: (raw) => {
    const v = DHCP_VALUES[String(raw).trim().toLowerCase()];
    return v !== undefined && (typeof raw === "string" || typeof raw === "boolean") ? { ok: true, value: v } : { ok: false, message: "" };
  },
});

const MAC = /^[0-9A-Fa-f]{2}([:-][0-9A-Fa-f]{2}){5}$/;

const mac = custom<string>({
  expected: "a MAC address such as 52:54:00:12:34:56",
  description: "The port's MAC address (printed on the box or shown by `ip link`): right whatever name the kernel gives the port.",
  jsonSchema: { type: "string", pattern: MAC.source },
  parse: (raw) => {
    if (typeof raw !== "string") return { ok: false, message: typeof raw === "number" ? 'quote the MAC address: "52:54:00:12:34:56"' : "" };
    const t = raw.trim();
    return MAC.test(t) ? { ok: true, value: t.toLowerCase().replace(/-/g, ":") } : { ok: false, message: "" };
  },
});

/** A kernel interface name (at most 15 characters), or a networkd glob of them (en*, eth[01]). */
const IFNAME = /^[A-Za-z0-9_.:*?[\]-]{1,15}$/;
const HOSTNAME = /^(?=.{1,64}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
/** A DNS name or an address: what timesyncd takes in NTP=. */
const SERVER = /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?|[0-9A-Fa-f:.]+)$/;

/** Whether `addr` lies in the network of `net` (the prefix's bits of both agree). */
export function inNetwork(addr: string, net: Cidr): boolean {
  const family = net.family === 4 ? "ipv4" : "ipv6";
  if ((net.family === 4) !== isIPv4(addr)) return false;
  const list = new BlockList();
  list.addSubnet(net.address, net.prefix, family);
  return list.check(addr, family);
}

const portShape = {
  name: optional(
    string({
      description: "The port's interface name as the gateway's kernel calls it (eth0, end0, enp1s0; `ip link` lists them), or a pattern such as en*.",
      pattern: IFNAME,
      patternText: "an interface name such as eth0 or enp1s0 (at most 15 characters; * and ? match any)",
    }),
  ),
  mac: optional(mac),
  dhcp: optional(dhcp),
  addresses: array(cidr, {
    description: "Static addresses with their prefix length: 192.168.10.20/24, fd00::20/64.",
    default: [],
    maxItems: 32,
  }),
  gateway: optional(ipAddress(4, "The IPv4 router of this port's network, for addresses beyond it.")),
  gateway6: optional(ipAddress(6, "The IPv6 router of this port's network.")),
  dns: array(ipAddress(0, "A DNS server."), {
    description: "DNS servers (addresses), used besides any that DHCP announces.",
    default: [],
    maxItems: 8,
  }),
  linkLocal: optional(
    boolean({
      description:
        "A link-local address (169.254.x.x) besides the others, so that a laptop on a direct cable finds the gateway. Default: true on a DHCP port (used when no DHCP server answers), false on a static one.",
    }),
  ),
};

const port = object(
  portShape,
  {
    description: "One network port: which one (name or mac), and how it gets its addresses.",
    check: checkPort,
    resolve: resolvePort,
  },
);

/** The defaults that depend on other keys, filled in once (validate.ts calls it on the value in place). */
function resolvePort(v: ObjectValue<typeof portShape>): ObjectValue<typeof portShape> & { readonly dhcp: DhcpMode; readonly linkLocal: boolean } {
  const p = v as { dhcp?: DhcpMode; linkLocal?: boolean; addresses: readonly Cidr[] };
  p.dhcp ??= p.addresses.length > 0 ? "no" : "yes";
  p.linkLocal ??= p.dhcp !== "no";
  return v as ObjectValue<typeof portShape> & { readonly dhcp: DhcpMode; readonly linkLocal: boolean };
}

function checkPort(v: { name?: string; mac?: string; dhcp?: DhcpMode; addresses: readonly Cidr[]; gateway?: string; gateway6?: string; linkLocal?: boolean }, c: Checker): void {
  if (v.name === undefined && v.mac === undefined) c.report([], "expected name (such as eth0) or mac (such as 52:54:00:12:34:56): which port this is");
  if (v.name !== undefined && v.mac !== undefined) c.report("mac", "expected name or mac, not both: a port is found by one of them");
  const mode = v.dhcp ?? (v.addresses.length > 0 ? "no" : "yes");
  const v4 = v.addresses.filter((a) => a.family === 4);
  const v6 = v.addresses.filter((a) => a.family === 6);
  if (mode === "no" && v.addresses.length === 0 && v.linkLocal !== true) {
    c.report(c.given("dhcp") ? "dhcp" : [], "expected addresses when dhcp is no: the port would have no address (give addresses, or dhcp: yes)");
  }
  const dhcp4 = mode === "yes" || mode === "ipv4";
  const dhcp6 = mode === "yes" || mode === "ipv6";
  if (v.gateway !== undefined && !v4.some((a) => inNetwork(v.gateway!, a))) {
    if (v4.length > 0) c.report("gateway", `expected an address in the network of ${v4.map((a) => a.text).join(" or ")}, got ${v.gateway}: the gateway must be reachable on this port`);
    else if (!dhcp4) c.report("gateway", "expected an IPv4 address in addresses (or dhcp: yes) for the gateway to be reached");
  }
  if (v.gateway6 !== undefined && !v.gateway6.toLowerCase().startsWith("fe80:") && !v6.some((a) => inNetwork(v.gateway6!, a))) {
    if (v6.length > 0) c.report("gateway6", `expected an address in the network of ${v6.map((a) => a.text).join(" or ")} or a link-local fe80:: address, got ${v.gateway6}`);
    else if (!dhcp6) c.report("gateway6", "expected an IPv6 address in addresses (or dhcp: yes or ipv6) for the gateway to be reached");
  }
  for (let i = 0; i < v.addresses.length; i++) {
    for (let j = 0; j < i; j++) {
      if (v.addresses[i]!.address === v.addresses[j]!.address) c.report(["addresses", i], `${v.addresses[i]!.address} is listed twice`);
    }
  }
}

const timeZone = custom<string>({
  expected: "a time zone of the tz database such as Europe/Berlin, America/Chicago or UTC",
  description: "The gateway's local time zone (logs, the update window). Default: UTC.",
  jsonSchema: { type: "string", pattern: "^[A-Za-z0-9_+/-]+$" },
  parse: (raw) => {
    if (typeof raw !== "string" || !/^[A-Za-z0-9_+/-]+$/.test(raw.trim())) return { ok: false, message: "" };
    try {
      // Intl knows the tz database's names (those of the ICU that Node carries), in any case.
      const canonical = new Intl.DateTimeFormat("en", { timeZone: raw.trim() }).resolvedOptions().timeZone;
      return { ok: true, value: canonical };
    } catch {
      const near = suggest(raw.trim(), Intl.supportedValuesOf("timeZone"));
      return { ok: false, message: near ? `did you mean "${near}"?` : "" };
    }
  },
});

export const networkSchema = object(
  {
    hostname: optional(
      string({
        description: "The gateway's name on the network (sent with DHCP requests, shown in the page). Default: fieldgate.",
        pattern: HOSTNAME,
        patternText: "a host name of letters, digits and -, such as line3-gateway (at most 64 characters)",
      }),
    ),
    timeZone: optional(timeZone),
    ntp: array(
      string({ pattern: SERVER, patternText: "an NTP server's name or address, such as pool.ntp.org or 192.168.10.1" }),
      { description: "NTP servers. Default: the ones DHCP announces, else Debian's pool (needs internet access).", default: [], maxItems: 8 },
    ),
    ports: array(port, {
      description: "Ports with settings of their own. A port not listed gets an address by DHCP, and a link-local one (169.254.x.x) when no DHCP server answers.",
      default: [],
      maxItems: 16,
    }),
  },
  {
    description: "fieldgate network settings (the appliance's ports, hostname, time servers and time zone).",
    check(v, c) {
      const seen = new Map<string, number>();
      v.ports.forEach((p, i) => {
        const key = p.mac !== undefined ? `mac ${p.mac}` : `name ${p.name}`;
        const first = seen.get(key);
        if (first !== undefined) c.report(["ports", i, p.mac !== undefined ? "mac" : "name"], `the port with ${key} is already ports[${first}]`);
        else seen.set(key, i);
      });
      const owner = new Map<string, number>();
      v.ports.forEach((p, i) => {
        p.addresses.forEach((a, k) => {
          const first = owner.get(a.address);
          if (first !== undefined && first !== i) c.report(["ports", i, "addresses", k], `${a.address} is already an address of ports[${first}]`);
          else owner.set(a.address, i);
        });
      });
    },
  },
);

export type NetworkConfig = Infer<typeof networkSchema>;
export type PortConfig = NetworkConfig["ports"][number];

/** Checks network.yaml text as if it were the file `file` (shown in messages). */
export function validateNetworkYaml(text: string, file: string): ValidationResult<NetworkConfig> {
  return validateYaml(networkSchema, text, file);
}

/** For `fieldgate validate --network`: every issue of the file, none when it is valid. */
export function validateNetworkFile(file: string): ConfigIssue[] {
  return [...validateFile(networkSchema, file).issues];
}
