// The FIELDGATE drive's checks in image/update-check.mjs's boots (README, "First hour"):
//   before boot 1  a devices.yaml with a typo put on the drive (the example, CRLF, one address
//                  misspelt): boot 1 refuses it, says where in settings-import.json, and serves
//                  the map it had; IMPORT-RESULT.txt, read back from the disk with mtools after
//                  the boot, names file:line:column
//   before boot 5  network.yaml (a static address by MAC, hostname, time zone, NTP),
//                  authorized_keys and admin-password.txt (the first admin, as a person on
//                  Windows makes it): boot 5
//                  runs on the test's own network without DHCP, where the OPC UA client reads a
//                  tag at the static address and ssh logs in; the status page's API, logged in
//                  as that admin with HTTP Basic as a script would, lists the drive's files as
//                  versions and proposes a change of address that nobody confirms: its timer
//                  reverts it, and the old address answers again; after the boot the set is in
//                  applied/ on the drive and the password file is gone from it.
import { spawnSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { AttributeIds } from "node-opcua-client";
import { check, figures, helloAnswered, sleep } from "./boot-check.mjs";
import { Drive, settingsPartition } from "./settings-drive.mjs";

/** The test network (test.sh's namespace): the host side of the tap is .1. */
export const MAC = "52:54:00:fe:77:10";
const STATIC = "192.168.77.10";
const OTHER = "192.168.77.11";
export const STATIC_URL = `opc.tcp://${STATIC}:4840`;
const OTHER_URL = `opc.tcp://${OTHER}:4840`;
/** The status page's port in the image's gateway.yaml (web.port). */
const WEB_PORT = 8443;
/** The admin the drive's admin-password.txt brings, with a password made for this run. */
const ADMIN = { user: "admin", password: randomBytes(12).toString("base64url") };
const networkYaml = (address) =>
  `# put on the drive by image/settings-check.mjs\nhostname: line3-gateway\ntimeZone: Europe/Berlin\nntp: [192.168.77.1]\nports:\n  - mac: ${MAC}\n    addresses: [${address}/24]\n    dns: [192.168.77.1]\n`;
const crlf = (s) => s.replace(/\r?\n/g, "\r\n");
const log = (m) => console.log(`     ${m}`);

export class SettingsCheck {
  constructor(disk, image, work) {
    this.drive = new Drive(disk, settingsPartition(image), `${work}/settings.fat`);
    this.work = work;
    this.scratch = `${work}/drive-file`;
  }

  // ---- Boot 1: a broken devices.yaml.

  putBrokenMap() {
    this.drive.load();
    const example = this.drive.read("/fieldgate/devices.yaml.example");
    // The temperature tag's address, misspelt as a person might.
    const broken = example.replace(/(\r\n {8}address: )input:2\r\n/, "$1inptu:2\r\n");
    if (broken === example) throw new Error("devices.yaml.example on the drive has no `address: input:2` line to break");
    const lines = broken.split("\r\n");
    this.brokenLine = lines.findIndex((l) => l.includes("inptu:2")) + 1;
    this.brokenColumn = lines[this.brokenLine - 1].indexOf("inptu:2") + 1;
    this.drive.write("/fieldgate/devices.yaml", broken, this.scratch).save();
    log(`the drive: fieldgate/devices.yaml with "inptu:2" at line ${this.brokenLine}, column ${this.brokenColumn}`);
  }

  async previousMapServes(session, tag) {
    const dv = await readGood(session, tag);
    check(dv.statusCode.isGood(), `boot 1: the map it had serves: ${tag} = ${dv.value.value} (${dv.statusCode.name}), the tag whose address the refused file broke`);
  }

  async refusedOnTheGateway(sh) {
    const out = await sh.run(
      "tr -d '\\n' < /var/lib/fieldgate/settings-import.json; echo; cmp -s /etc/fieldgate/devices.yaml /usr/share/fieldgate/config/devices.yaml && echo unchanged || echo changed; " +
        "systemctl is-active fieldgate-settings.service; ls -A /etc/fieldgate | tr '\\n' ' '; echo; journalctl -b -u fieldgate-settings --no-pager -o cat | grep -c 'refused: devices.yaml'",
    );
    const [json, unchanged, active, listing = "", logged] = out.split("\n");
    figures.settingsUnitRefused = await unitTime(sh);
    let status = {};
    try {
      status = JSON.parse(json);
    } catch {
      // Checked below.
    }
    const issue = status.issues?.[0];
    check(
      status.result === "refused" && status.issues?.length === 1 && issue.file === "devices.yaml" && issue.line === this.brokenLine && issue.column === this.brokenColumn && /address$/.test(issue.path),
      `boot 1: the broken devices.yaml refused, for the page (settings-import.json: ${status.result}, ${status.issues?.length} issue(s)): ${issue ? `${issue.file}:${issue.line}:${issue.column}: ${issue.path}: ${issue.message}` : json}${status.issues?.length > 1 ? `; all: ${JSON.stringify(status.issues)}` : ""} (expected line ${this.brokenLine}, column ${this.brokenColumn})`,
    );
    check(unchanged === "unchanged" && !/previous|settings-import/.test(listing) && active === "active" && Number(logged) >= 1,
      `boot 1: /etc/fieldgate unchanged (${listing.trim()}), fieldgate-settings.service ${active}, the refusal in its journal`);
  }

  refusedOnTheDrive() {
    this.drive.load();
    const text = this.drive.read("/fieldgate/IMPORT-RESULT.txt");
    const where = `devices.yaml:${this.brokenLine}:${this.brokenColumn}: devices[0].tags[`;
    check(/NOT APPLIED/.test(text) && text.includes(where) && text.includes('"inptu:2"; did you mean "input:"?') && !/[^\r]\n/.test(text),
      `IMPORT-RESULT.txt on the drive (mtools, CRLF): ${text.split("\r\n").find((l) => l.includes(where))?.trim() ?? text.slice(0, 300)}`);
    const listing = this.drive.list("/fieldgate");
    check(listing.includes("devices.yaml") && !listing.includes("applied"), `the refused set stays on the drive to be fixed: ${listing.join(" ")}`);
    this.drive.remove("/fieldgate/devices.yaml").save();
  }

  // ---- Boot 5: a static address on a network without DHCP, and SSH.

  putStaticNetwork() {
    // A key pair for the login: ssh-keygen's where there is one, else a public key alone.
    this.key = `${this.work}/id_ed25519`;
    let pub;
    if (spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "image-test", "-f", this.key]).status === 0) {
      pub = readFileSync(`${this.key}.pub`, "utf8").trim();
    } else {
      const raw = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" }).subarray(-32);
      const str = (b) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
      pub = `ssh-ed25519 ${Buffer.concat([str(Buffer.from("ssh-ed25519")), str(raw)]).toString("base64")} image-test`;
      this.key = undefined;
    }
    this.drive.load();
    // The example as a person would make it in Notepad: its comments kept, the password added.
    const example = this.drive.read("/fieldgate/admin-password.txt.example");
    const password = `${example.endsWith("\r\n") ? example : `${example}\r\n`}${ADMIN.password}\r\n`;
    this.drive
      .write("/fieldgate/network.yaml", crlf(networkYaml(STATIC)), this.scratch)
      .write("/fieldgate/authorized_keys", crlf(`${pub}\n`), this.scratch)
      .write("/fieldgate/admin-password.txt", password, this.scratch)
      .save();
    log(`the drive: fieldgate/network.yaml (${STATIC}/24 on ${MAC}, no DHCP), authorized_keys, admin-password.txt (user ${ADMIN.user})`);
  }

  async tagAtStaticAddress(session, tag) {
    const dv = await readGood(session, tag);
    check(dv.statusCode.isGood(), `boot 5: at the static address ${STATIC_URL}, on a network without DHCP: ${tag} = ${dv.value.value} (${dv.statusCode.name})`);
  }

  async appliedOnTheGateway(sh) {
    const out = await sh.run(
      "tr -d '\\n' < /var/lib/fieldgate/settings-import.json; echo; ip -4 -o addr show scope global | awk '{ print $2, $4 }' | tr '\\n' ' '; echo; hostname; readlink /etc/localtime /run/fieldgate/localtime | tr '\\n' ' '; echo; date +%Z; " +
        "grep -h NTP= /run/systemd/timesyncd.conf.d/fieldgate.conf; systemctl is-active ssh.service; ls /data/etc/ssh | tr '\\n' ' '",
    );
    const [json, addrs = "", host, tz = "", zone, ntp, ssh, sshFiles = ""] = out.split("\n");
    figures.settingsUnitApplied = await unitTime(sh);
    let status = {};
    try {
      status = JSON.parse(json);
    } catch {
      // Checked below.
    }
    check(status.result === "applied" && [...(status.files ?? [])].sort().join(",") === "admin-password.txt,authorized_keys,network.yaml", `boot 5: the drive's set applied (settings-import.json: ${status.result} ${status.files?.join(", ")}, moved to ${status.movedTo})`);
    check(addrs.trim() === `${addrs.split(" ")[0]} ${STATIC}/24`, `boot 5: the port has the static address only, no DHCP lease: ${addrs.trim()}`);
    check(host === "line3-gateway" && /Europe\/Berlin/.test(tz) && /^CES?T$/.test(zone) && ntp === "NTP=192.168.77.1",
      `boot 5: hostname ${host}, time zone ${tz.trim()} (${zone}), timesyncd ${ntp}`);
    check(ssh === "active" && /authorized_keys/.test(sshFiles) && /enabled/.test(sshFiles) && /ssh_host_ed25519_key/.test(sshFiles), `boot 5: SSH on by the drive's authorized_keys (${ssh}; /data/etc/ssh: ${sshFiles.trim()})`);
  }

  async sshLogin() {
    if (this.key === undefined || spawnSync("ssh", ["-V"]).status !== 0) {
      log("no ssh client or ssh-keygen on this machine: the login itself is not tried");
      return;
    }
    const r = spawnSync("ssh", ["-i", this.key, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=20", `root@${STATIC}`, "fieldgate validate --network /etc/fieldgate/network.yaml"], { encoding: "utf8", timeout: 60_000 });
    check(r.status === 0 && /network\.yaml: valid/.test(r.stdout), `boot 5: ssh root@${STATIC} with the key from the drive: ${(r.stdout + r.stderr).trim().split("\n").filter((l) => !/^Warning: Permanently added/.test(l)).join(" ")}`);
  }

  /**
   * The status page's API as a script uses it (HTTP Basic, the admin the drive brought): the
   * drive's files are versions by "FIELDGATE drive" in the page's Versions, after the files they
   * replaced; and the page shows the import's result.
   */
  async driveVersionsOnThePage() {
    const list = await api(STATIC, "GET", "/api/config/network/versions");
    const versions = list.status === 200 ? JSON.parse(list.body) : [];
    const who = versions.map((v) => v.user).join(", ");
    check(list.status === 200 && who === "FIELDGATE drive, on disk" && /^changed: .*ports/.test(versions[0].summary),
      `boot 5: https://${STATIC}:${WEB_PORT}/api/config/network/versions as ${ADMIN.user}: ${list.status} ${who}${versions[0] ? ` (${versions[0].summary})` : list.body.slice(0, 200)}`);
    const gw = await api(STATIC, "GET", "/api/config/gateway/versions");
    const gwVersions = gw.status === 200 ? JSON.parse(gw.body) : [];
    check(gw.status === 200 && gwVersions[0]?.user === "FIELDGATE drive" && /users/.test(gwVersions[0]?.summary ?? ""),
      `boot 5: the drive's password as a version of gateway.yaml: ${gw.status} ${gwVersions.map((v) => `${v.user} (${v.summary})`).join(", ") || gw.body.slice(0, 200)}`);
    const page = await api(STATIC, "GET", "/");
    const result = /id="import-result">([^<]*)</.exec(page.body)?.[1] ?? "";
    const shown = (/^applied [^:]+:[^:]+:[^:]+: (.*)$/.exec(result)?.[1] ?? "").split(", ").sort().join(",");
    check(page.status === 200 && shown === "admin-password.txt,authorized_keys,network.yaml", `boot 5: the page shows the drive's import: "${result || page.body.slice(0, 200)}"`);
  }

  /**
   * A change of address from the status page's API, not confirmed, goes back by itself: POST
   * /api/config/network (the gateway leaves the request, root's fieldgate-network-request.path
   * carries it out), the page at the new address says it is on trial, and systemd's timer
   * reverts it. The answer to the POST may never come: the address it went to is gone once the
   * change is made, which is why the confirmation is made from the new address.
   */
  async unconfirmedChangeReverts(sh) {
    const seconds = 20;
    const t0 = Date.now();
    const posted = api(STATIC, "POST", `/api/config/network?timeout=${seconds}`, networkYaml(OTHER), 90_000);
    let moved = false;
    for (let i = 0; i < 60 && !moved; i++) {
      moved = await helloAnswered(OTHER_URL);
      if (!moved) await sleep(1000);
    }
    const oldGone = moved && !(await helloAnswered(STATIC_URL));
    const answer = await Promise.race([posted, sleep(5000).then(() => ({ status: 0, body: "no answer yet: its address went away" }))]);
    check(moved && oldGone, `a network change from the API (POST /api/config/network?timeout=${seconds} as ${ADMIN.user}: ${[answer.status || answer.error, answer.body.slice(0, 160)].filter(Boolean).join(" ")}): ${OTHER} answers${oldGone ? `, ${STATIC} no longer` : `; ${STATIC} still answers`}`);
    const atNew = moved ? await api(OTHER, "GET", "/api/config/network/status") : { status: 0, body: "" };
    const pending = atNew.status === 200 ? JSON.parse(atNew.body).pending : undefined;
    check(pending?.by === ADMIN.user && pending?.timeoutSeconds === seconds, `the page at the new address: on trial by ${pending?.by} until ${pending?.deadline} (${atNew.status}${pending ? "" : ` ${atNew.body.slice(0, 200)}`})`);
    let back = false;
    while (!back && Date.now() - t0 < (seconds + 90) * 1000) {
      await sleep(2000);
      back = await helloAnswered(STATIC_URL);
    }
    figures.networkRevertSeconds = Math.round((Date.now() - t0) / 1000);
    const otherGone = back && !(await helloAnswered(OTHER_URL));
    const status = await sh.run("fieldgate network status");
    const after = back ? await api(STATIC, "GET", "/api/config/network/status") : { status: 0, body: "{}" };
    const last = after.status === 200 ? JSON.parse(after.body).last : undefined;
    check(back && otherGone && /the last one was reverted .*not confirmed within 20 s/.test(status) && last?.result === "reverted" && last?.by === ADMIN.user,
      `not confirmed: ${STATIC} answers again ${figures.networkRevertSeconds} s after the change (timer ${seconds} s)${otherGone ? `, ${OTHER} no longer` : ""}; ${status.split("\n").find((l) => /last one/.test(l)) ?? status}; the API: ${last?.result} (${last?.reason})`);
  }

  appliedOnTheDrive() {
    this.drive.load();
    const text = this.drive.read("/fieldgate/IMPORT-RESULT.txt");
    const listing = this.drive.list("/fieldgate");
    const sets = this.drive.list("/fieldgate/applied");
    const moved = sets.length === 1 ? this.drive.list(`/fieldgate/applied/${sets[0]}`) : [];
    check(/APPLIED\./.test(text) && /admin-password\.txt was removed from the drive/.test(text) && !listing.includes("network.yaml") && !listing.includes("authorized_keys") && !listing.includes("admin-password.txt") && moved.sort().join(",") === "authorized_keys,network.yaml",
      `after boot 5, on the drive: IMPORT-RESULT.txt "${text.split("\r\n")[2]}", the set in applied/${sets.join(",")}/ (${moved.join(", ")}), the folder: ${listing.join(" ")}`);
  }
}

/** How long fieldgate-settings.service took at this boot (systemd-analyze blame), e.g. "2.345s". */
export async function unitTime(sh) {
  return (await sh.run("systemd-analyze blame --no-pager | grep ' fieldgate-settings.service$' | sed 's/ fieldgate-settings.service$//' | tr -s ' '")).trim() || "?";
}

/** A tag's value, once the first poll has answered (a few tries: BadWaitingForInitialData before). */
async function readGood(session, tag) {
  let dv = await session.read({ nodeId: tag, attributeId: AttributeIds.Value });
  for (let i = 0; i < 20 && !dv.statusCode.isGood(); i++) {
    await sleep(1000);
    dv = await session.read({ nodeId: tag, attributeId: AttributeIds.Value });
  }
  return dv;
}

/**
 * One request to the status page at `host`, as the drive's admin with HTTP Basic: {status, body},
 * or status 0 and the error. The page's certificate is the gateway's own (pki/own), made at its
 * first start: not checked here.
 */
function api(host, method, path, body, timeout = 30_000) {
  return new Promise((resolve) => {
    const req = request(
      { host, port: WEB_PORT, path, method, rejectUnauthorized: false, headers: { authorization: `Basic ${Buffer.from(`${ADMIN.user}:${ADMIN.password}`).toString("base64")}`, ...(body === undefined ? {} : { "content-type": "text/yaml" }) } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", (err) => resolve({ status: 0, body: "", error: err.message }));
    req.setTimeout(timeout, () => req.destroy(new Error(`no answer in ${timeout / 1000} s`)));
    req.end(body);
  });
}
