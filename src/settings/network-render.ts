// network.yaml (validated, src/config/network-config.ts) as the files systemd reads: one
// systemd-networkd .network file per listed port (systemd.network(5)), a timesyncd drop-in for
// the NTP servers (timesyncd.conf(5)), and the hostname and time zone, which the read-only root
// cannot hold and network-apply.ts sets in the running system instead.
//
// The port files are named 10-fieldgate-NN-<what>.network: networkd takes, for each link, the
// first file in lexical order that matches it, so they come before the image's own
// 20-wired.network (DHCP and link-local for every en*/eth* port), which keeps serving every port
// the file does not list. NN keeps the file's order, which is the order a person reads.
import type { NetworkConfig, PortConfig } from "../config/network-config.js";

export const PORT_FILE_PREFIX = "10-fieldgate-";
export const TIMESYNCD_DROP_IN = "fieldgate.conf";

export interface RenderedNetwork {
  /** File name -> text, for the networkd folder. */
  readonly networkFiles: ReadonlyMap<string, string>;
  /** The timesyncd drop-in's text, or undefined when the file names no NTP server. */
  readonly timesyncd?: string;
  readonly hostname?: string;
  readonly timeZone?: string;
}

export function renderNetwork(config: NetworkConfig, source: string): RenderedNetwork {
  const header = `# Made by fieldgate from ${source}; do not edit: it is made again at every boot.\n`;
  const networkFiles = new Map<string, string>();
  config.ports.forEach((port, i) => {
    networkFiles.set(portFileName(port, i), header + renderPort(port, i));
  });
  const timesyncd = config.ntp.length > 0 ? `${header}[Time]\nNTP=${config.ntp.join(" ")}\n` : undefined;
  return {
    networkFiles,
    ...(timesyncd === undefined ? {} : { timesyncd }),
    ...(config.hostname === undefined ? {} : { hostname: config.hostname }),
    ...(config.timeZone === undefined ? {} : { timeZone: config.timeZone }),
  };
}

export function portFileName(port: PortConfig, index: number): string {
  const what = port.mac !== undefined ? `mac-${port.mac.replace(/:/g, "")}` : `name-${port.name!.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
  return `${PORT_FILE_PREFIX}${String(index).padStart(2, "0")}-${what}.network`;
}

function renderPort(port: PortConfig, index: number): string {
  const lines: string[] = [`# ports[${index}]`, "[Match]"];
  // Type=ether: a bridge or VLAN on top of the port carries its MAC address too.
  if (port.mac !== undefined) lines.push(`MACAddress=${port.mac}`, "Type=ether");
  else lines.push(`Name=${port.name}`);
  lines.push("", "[Network]", `DHCP=${port.dhcp}`);
  // IPv6 link-local stays on whatever the file says: neighbour discovery and router
  // advertisements need it (RFC 4861 §1, RFC 4862 §5.3).
  lines.push(`LinkLocalAddressing=${port.linkLocal ? "yes" : "ipv6"}`);
  for (const a of port.addresses) lines.push(`Address=${a.text}`);
  if (port.gateway !== undefined) lines.push(`Gateway=${port.gateway}`);
  if (port.gateway6 !== undefined) lines.push(`Gateway=${port.gateway6}`);
  for (const d of port.dns) lines.push(`DNS=${d}`);
  return `${lines.join("\n")}\n`;
}
