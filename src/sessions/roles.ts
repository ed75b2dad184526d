// Roles (issue 6): what a session may do, decided once at ActivateSession and handed to the node
// managers as RequestContext.role. Three fixed roles instead of Part 3's configurable Role
// objects: a gateway has few users, and an operator reads `role: operator` in gateway.yaml more
// easily than a RolePermissions table.
//   viewer:   Browse, Read, subscribe (monitored items), HistoryRead
//   operator: viewer + Write of device tags
//   admin:    operator + Write of configuration nodes (where a namespace exposes any)
import type { RequestContext } from "../address-space/node-manager.js";
import { ROLE_NAMES } from "../config/credentials.js";

export type Role = RequestContext["role"];

/** Every role, least privileged first (the order in which they include one another): gateway.yaml's names. */
export const ROLES: readonly Role[] = ROLE_NAMES;

/** What a role may do beyond reading; services that are not Write ask here. */
export const enum Permission {
  Browse = 1,
  Read = 2,
  Subscribe = 4,
  HistoryRead = 8,
  WriteDeviceTags = 16,
  WriteConfiguration = 32,
}

const VIEWER = Permission.Browse | Permission.Read | Permission.Subscribe | Permission.HistoryRead;
const PERMISSIONS: Readonly<Record<Role, number>> = {
  viewer: VIEWER,
  operator: VIEWER | Permission.WriteDeviceTags,
  admin: VIEWER | Permission.WriteDeviceTags | Permission.WriteConfiguration,
};

export function hasPermission(role: Role, permission: Permission): boolean {
  return (PERMISSIONS[role] & permission) === permission;
}
