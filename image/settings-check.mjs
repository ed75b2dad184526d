// The FIELDGATE drive's checks in image/update-check.mjs's boots (README, "First hour"):
//   before boot 1  a devices.yaml with a typo put on the drive (the example, CRLF, one address
//                  misspelt): boot 1 refuses it, says where in settings-import.json, and serves
//                  the map it had; IMPORT-RESULT.txt, read back from the disk with mtools after
//                  the boot, names file:line:column
//   before boot 5  network.yaml (a static address by MAC, hostname, time zone, NTP) and
//                  authorized_keys: boot 5 runs on the test's own network without DHCP, where
//                  the OPC UA client reads a tag at the static address and ssh logs in; a change
//                  of address that nobody confirms is reverted by its timer, and the old
//                  address answers again; after the boot the set is in applied/ on the drive.
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { AttributeIds } from "node-opcua-client";
import { check, figures, helloAnswered, sleep } from "./boot-check.mjs";
import { Drive, settingsPartition } from "./settings-drive.mjs";

/** The test network (test.sh's namespace): the host side of the tap is .1. */
export const MAC = "52:54:00:fe:77:10";
const STATIC = "192.168.77.10";
const OTHER = "192.168.77.11";
export const STATIC_URL = `opc.tcp://${STATIC}:4840`;
const OTHER_URL = `opc.tcp://${OTHER}:4840`;
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
    this.drive.write("/fieldgate/network.yaml", crlf(networkYaml(STATIC)), this.scratch).write("/fieldgate/authorized_keys", crlf(`${pub}\n`), this.scratch).save();
    log(`the drive: fieldgate/network.yaml (${STATIC}/24 on ${MAC}, no DHCP) and authorized_keys`);
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
    check(status.result === "applied" && status.files?.join(",") === "network.yaml,authorized_keys", `boot 5: the drive's set applied (settings-import.json: ${status.result} ${status.files?.join(", ")}, moved to ${status.movedTo})`);
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
   * A change of address that nobody confirms goes back by itself. Proposed the way the page's API
   * will propose it: a request left by the gateway's user (src/settings/network-requests.ts),
   * carried out by root's fieldgate-network-request.path; the revert is systemd's timer. The hook
   * for the API's own check: `propose` becomes a POST /api/config/network (with a login), the
   * rest stays.
   */
  async unconfirmedChangeReverts(sh, propose = (yaml, seconds) => proposeByRequest(sh, yaml, seconds)) {
    const seconds = 20;
    const t0 = Date.now();
    const said = await propose(networkYaml(OTHER), seconds);
    let moved = false;
    for (let i = 0; i < 30 && !moved; i++) {
      moved = await helloAnswered(OTHER_URL);
      if (!moved) await sleep(1000);
    }
    const oldGone = moved && !(await helloAnswered(STATIC_URL));
    check(moved && oldGone, `a network change on trial (${said}): ${OTHER} answers${oldGone ? `, ${STATIC} no longer` : `; ${STATIC} still answers`}`);
    let back = false;
    while (!back && Date.now() - t0 < (seconds + 60) * 1000) {
      await sleep(2000);
      back = await helloAnswered(STATIC_URL);
    }
    figures.networkRevertSeconds = Math.round((Date.now() - t0) / 1000);
    const otherGone = back && !(await helloAnswered(OTHER_URL));
    const status = await sh.run("fieldgate network status");
    check(back && otherGone && /the last one was reverted .*not confirmed within 20 s/.test(status),
      `not confirmed: ${STATIC} answers again ${figures.networkRevertSeconds} s after the change (timer ${seconds} s)${otherGone ? `, ${OTHER} no longer` : ""}; ${status.split("\n").find((l) => /last one/.test(l)) ?? status}`);
  }

  appliedOnTheDrive() {
    this.drive.load();
    const text = this.drive.read("/fieldgate/IMPORT-RESULT.txt");
    const listing = this.drive.list("/fieldgate");
    const sets = this.drive.list("/fieldgate/applied");
    const moved = sets.length === 1 ? this.drive.list(`/fieldgate/applied/${sets[0]}`) : [];
    check(/APPLIED\./.test(text) && !listing.includes("network.yaml") && !listing.includes("authorized_keys") && moved.sort().join(",") === "authorized_keys,network.yaml",
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
 * As the gateway's user (which may write nothing but /var/lib/fieldgate): request.json, written
 * under another name and renamed, then root's answer in response.json.
 */
async function proposeByRequest(sh, yaml, seconds) {
  const dir = "/var/lib/fieldgate/network-request";
  const id = `image-test-${Date.now()}`;
  const b64 = Buffer.from(JSON.stringify({ id, action: "try", by: "the image test, as user fieldgate", text: yaml, timeoutSeconds: seconds })).toString("base64");
  await sh.run(`echo ${b64} | base64 -d | runuser -u fieldgate -- sh -c 'cat > ${dir}/.request.json && mv ${dir}/.request.json ${dir}/request.json'`);
  let answer = "";
  for (let i = 0; i < 60 && !answer.includes(id); i++) {
    await sleep(1000);
    answer = await sh.run(`cat ${dir}/response.json 2>/dev/null`);
  }
  const ok = answer.includes(id) && /"ok":true/.test(answer);
  check(ok, `the gateway's user asked for the change (${dir}/request.json), root carried it out: ${answer.slice(0, 200) || "no answer in 60 s"}`);
  return "asked for by the gateway's user, carried out by fieldgate-network-request.path";
}
