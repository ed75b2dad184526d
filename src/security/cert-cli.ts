// `fieldgate cert list | trust | reject | regenerate | thumbprint`: the operator's view of the
// PKI folder (<dataDir>/pki) of a gateway.yaml. Works on the files, so it runs while the gateway
// runs: the gateway re-reads trusted/ and rejected/ when they change. A regenerated own
// certificate is used from the next start.
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadGatewayConfig } from "../config/load.js";
import type { GatewayConfig } from "../config/gateway-config.js";
import type { CertificateInfo } from "./certificates.js";
import { Pki, type PkiOptions } from "./pki.js";

export const CERT_USAGE = `  fieldgate cert list [--config FILE]       the gateway's certificate, trusted, issuer and rejected ones
  fieldgate cert trust THUMBPRINT|FILE      trust a rejected certificate (or a .der/.pem file)
  fieldgate cert reject THUMBPRINT|FILE     move a trusted certificate to rejected/
  fieldgate cert regenerate                 make a new certificate for the gateway (used from the next start)
  fieldgate cert thumbprint                 print the gateway's certificate thumbprint (SHA-1)`;

/** The PKI of a gateway config, as the server opens it. */
export function pkiOptions(config: GatewayConfig): PkiOptions {
  const sec = config.security;
  return {
    root: join(config.dataDir, "pki"),
    applicationUri: config.server.applicationUri,
    applicationName: config.server.applicationName,
    certificateValidityDays: Math.max(1, Math.round(sec.certificateValidity / 86_400_000)),
    maxChainLength: sec.maxChainLength,
    maxRejected: sec.maxRejectedCertificates,
  };
}

function line(i: CertificateInfo): string {
  const until = i.notAfter.toISOString().slice(0, 10);
  const expired = i.notAfter.getTime() < Date.now() ? " EXPIRED" : "";
  return `  ${i.thumbprint}  ${i.subject}  until ${until}${expired}${i.applicationUri ? `  ${i.applicationUri}` : ""}${i.isCa ? "  (CA)" : ""}`;
}

/** Runs `fieldgate cert ...`; returns the exit code. */
export async function certCommand(argv: string[], out: (s: string) => void = console.log, err: (s: string) => void = console.error): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: "string", short: "c" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  const [sub, arg] = positionals;
  if (values.help || sub === undefined) {
    out(`usage:\n${CERT_USAGE}`);
    return sub === undefined && !values.help ? 2 : 0;
  }
  let config: GatewayConfig;
  try {
    config = loadGatewayConfig(values.config ?? "config/gateway.yaml");
  } catch (e) {
    if (e instanceof ConfigError) {
      err(e.message);
      return 1;
    }
    throw e;
  }
  const options = pkiOptions(config);
  try {
    switch (sub) {
      case "regenerate": {
        await Pki.regenerate(options);
        const pki = await Pki.open(options);
        out(`new certificate ${pki.ownThumbprint}; restart the gateway to use it, and trust it again in the clients`);
        return 0;
      }
      case "thumbprint": {
        const pki = await Pki.open(options);
        out(pki.ownThumbprint);
        return 0;
      }
      case "list": {
        const pki = await Pki.open(options);
        const l = pki.list();
        out(`own (${pki.root}/own):\n${line(l.own)}`);
        for (const [name, list] of [
          ["trusted", l.trusted],
          ["issuers", l.issuers],
          ["rejected", l.rejected],
        ] as const) {
          out(`${name} (${list.length}):`);
          for (const i of list) out(line(i));
        }
        return 0;
      }
      case "trust":
      case "reject": {
        if (arg === undefined) {
          err(`fieldgate cert ${sub}: give a thumbprint (from \`fieldgate cert list\`) or a certificate file`);
          return 2;
        }
        const pki = await Pki.open(options);
        const info = sub === "trust" ? pki.trust(arg) : pki.reject(arg);
        out(`${sub === "trust" ? "trusted" : "rejected"}: ${info.thumbprint}  ${info.subject}`);
        return 0;
      }
      default:
        err(`unknown cert command "${sub}"\nusage:\n${CERT_USAGE}`);
        return 2;
    }
  } catch (e) {
    err(`fieldgate cert ${sub}: ${(e as Error).message}`);
    return 1;
  }
}
