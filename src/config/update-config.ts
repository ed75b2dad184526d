// The `update:` section of gateway.yaml (included by src/config/gateway-config.ts). Read by the
// update commands (`fieldgate update`, the inbox and URL check, the trial check), never by the
// running gateway: a change applies at the next check without a reload.
import { duration, enumOf, object, optional, path, string, type Infer } from "./schema.js";

const DAY = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const TIME = "([01][0-9]|2[0-3]):[0-5][0-9]";
/** "03:00-05:00" (every day), "Sat,Sun 02:00-06:00", "Mon-Fri 22:00-02:00" (ends the next day). */
export const WINDOW_PATTERN = new RegExp(`^(${DAY}(-${DAY})?(,${DAY}(-${DAY})?)* +)?${TIME}-${TIME}$`);

export const updateSchema = object(
  {
    reboot: enumOf(["now", "window", "manual"] as const, {
      description:
        "When a newly installed version is started: now (reboot at once), window (at the start of the next maintenance window, or at once inside one) or manual (at the next reboot an operator makes). `fieldgate update --reboot` overrides it for one install.",
      default: "window",
    }),
    window: string({
      description:
        "The maintenance window, in the gateway's local time (UTC on the appliance unless a time zone is set): HH:MM-HH:MM every day, or with days first: 'Sat,Sun 02:00-06:00', 'Mon-Fri 22:00-02:00' (a window that ends before it starts ends the next day).",
      default: "03:00-05:00",
      pattern: WINDOW_PATTERN,
      patternText: "a window such as 03:00-05:00 or Sat,Sun 02:00-06:00",
    }),
    url: optional(
      string({
        description:
          "An https URL of an update bundle, checked every checkInterval: a bundle newer than the running version is downloaded to the data partition, verified and installed. Without it, updates come only from `fieldgate update` and the inbox.",
        pattern: /^https:\/\/[^\s/]+(\/\S*)?$/,
        patternText: "an https:// URL",
      }),
    ),
    ca: optional(
      path({
        description: "PEM file of the certificate authorities that the update server's certificate must chain to. Default: the system's CA store.",
      }),
    ),
    checkInterval: duration({
      description: "How often url is checked for a newer bundle (a check reads the bundle's first 64 KiB; the rest is downloaded only when it is newer).",
      default: "6h",
      min: "5m",
      max: "30d",
    }),
    trialTimeout: duration({
      description:
        "How long the first boot of a new version has to become healthy (fieldgate running, its OPC UA endpoint answering, the device map loaded) before the gateway reboots into the previous version.",
      default: "5m",
      min: "30s",
      max: "15m",
    }),
  },
  { description: "Signed A/B updates of the appliance image: where they come from and when they are started (README, \"Updates\")." },
);

export type UpdateConfig = Infer<typeof updateSchema>;
