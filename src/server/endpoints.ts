// The endpoints the server offers (Part 4 §7.14) and its ApplicationDescription (§7.2).
import { hostname } from "node:os";
import { ApplicationType, MessageSecurityMode } from "../ua/generated/enums.js";
import type { ApplicationDescription, EndpointDescription } from "../ua/generated/types.js";
import { userTokenPolicies } from "../sessions/user-tokens.js";
import { DISCOVERY_TRANSPORT_PROFILE } from "../services/discovery.js";

export const SECURITY_POLICY_NONE = "http://opcfoundation.org/UA/SecurityPolicy#None";

/** One (policy, mode) pair offered as an endpoint. */
export interface EndpointOffer {
  readonly securityPolicyUri: string;
  readonly securityMode: MessageSecurityMode;
  /** Part 4 §7.14: relative; higher means more secure. */
  readonly securityLevel: number;
}

const NONE_OFFER: EndpointOffer = { securityPolicyUri: SECURITY_POLICY_NONE, securityMode: MessageSecurityMode.None, securityLevel: 0 };

/**
 * The offers of a config: None (mode None) when listed, and every signing policy in every listed
 * mode. SignAndEncrypt ranks above Sign, stronger policies above weaker (Part 4 §7.14 leaves the
 * scale to the server).
 */
export function endpointOffers(policies: readonly { uri: string; strength: number }[], modes: readonly MessageSecurityMode[], none: boolean): EndpointOffer[] {
  const out: EndpointOffer[] = none ? [NONE_OFFER] : [];
  for (const p of policies) {
    for (const mode of modes) {
      out.push({ securityPolicyUri: p.uri, securityMode: mode, securityLevel: (mode === MessageSecurityMode.SignAndEncrypt ? 10 : 0) + p.strength });
    }
  }
  return out;
}

export interface EndpointOptions {
  application: ApplicationDescription;
  allowAnonymous: boolean;
  /** Users with passwords / certificates exist: UserName / X509 token policies on signed endpoints. */
  passwords?: boolean;
  certificates?: boolean;
  /** Policy/mode pairs offered; None only by default. */
  offers?: readonly EndpointOffer[];
  /** The gateway's certificate (DER), in every endpoint (Part 4 §7.14). */
  serverCertificate?: Buffer;
  /** The URL of the listener, used when a client names none (or names one we cannot parse). */
  defaultUrl: string;
}

/** The host name put into URLs when the listener is bound to every interface. */
export function advertisedHost(host: string): string {
  return host === "0.0.0.0" || host === "::" || host === "" ? hostname() : host;
}

/**
 * Endpoints keep the host the client used to reach us (a gateway is often reached through an
 * address that is not its own host name), with the port we listen on.
 */
export function endpointUrlFor(requested: string | undefined, fallback: string): string {
  if (!requested) return fallback;
  const m = /^opc\.tcp:\/\/(\[[^\]]+\]|[^:/]+)(?::\d+)?(\/.*)?$/i.exec(requested);
  const f = /^opc\.tcp:\/\/(?:\[[^\]]+\]|[^:/]+)(:\d+)/i.exec(fallback);
  if (!m || !f) return fallback;
  return `opc.tcp://${m[1]}${f[1]}${m[2] ?? ""}`;
}

export function buildEndpoints(options: EndpointOptions, requestedUrl: string | undefined): EndpointDescription[] {
  const url = endpointUrlFor(requestedUrl, options.defaultUrl);
  const tokenOptions = { allowAnonymous: options.allowAnonymous, passwords: options.passwords ?? false, certificates: options.certificates ?? false };
  const server = { ...options.application, discoveryUrls: [url] };
  return (options.offers ?? [NONE_OFFER]).map((o) => ({
    endpointUrl: url,
    server,
    serverCertificate: options.serverCertificate,
    securityMode: o.securityMode,
    securityPolicyUri: o.securityPolicyUri,
    // UserName and X509 only on signed endpoints (user-tokens.ts says why).
    userIdentityTokens: userTokenPolicies(o.securityPolicyUri, tokenOptions),
    transportProfileUri: DISCOVERY_TRANSPORT_PROFILE,
    // Part 4 §7.14: a relative rank; None is the least secure.
    securityLevel: o.securityLevel,
  }));
}

export function applicationDescription(applicationUri: string, productUri: string, applicationName: string): ApplicationDescription {
  return {
    applicationUri,
    productUri,
    applicationName: { locale: "en", text: applicationName },
    applicationType: ApplicationType.Server,
    gatewayServerUri: undefined,
    discoveryProfileUri: undefined,
    discoveryUrls: [],
  };
}
