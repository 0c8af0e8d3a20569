// The page's WebSocket frames read with the message types generated from proto/ (protobuf-es, as
// JavaScript for Node: buf.gen.yaml), so a test sees exactly what the browser received: each
// frame from the server one ConnectResponse, each frame from the page one ConnectRequest. A frame
// is read only if the generated types account for every one of its bytes: an unknown field, bytes
// left over or a frame that does not decode is an error, never an empty message.
//
// The types are generated into gen/ (ignored by git) when it is missing or was generated from
// other protos, with the buf and protoc-gen-es that web/ installs (scripts/build-web runs npm ci
// there).

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary, toBinary, toJson } from "@bufbuild/protobuf";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
const protoDir = join(root, "proto");
const gen = join(here, "gen");
const template = join(here, "buf.gen.yaml");

/** Every .proto file below `dir`, sorted. */
function protos(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...protos(path));
    else if (entry.name.endsWith(".proto")) out.push(path);
  }
  return out.sort();
}

/** A hash of what the types are generated from: the protos and the template. */
function inputsHash() {
  const hash = createHash("sha256");
  for (const path of [...protos(protoDir), template]) {
    hash.update(relative(root, path)).update("\0").update(readFileSync(path)).update("\0");
  }
  return hash.digest("hex");
}

/** Generates gen/ unless it was generated from the same inputs. */
function ensureGenerated() {
  const hash = inputsHash();
  const stamp = join(gen, "inputs.sha256");
  if (existsSync(stamp) && readFileSync(stamp, "utf8").trim() === hash) return;
  const bin = join(root, "web", "node_modules", ".bin");
  if (!existsSync(join(bin, "buf")) || !existsSync(join(bin, "protoc-gen-es"))) {
    throw new Error(
      "web/node_modules has no buf or protoc-gen-es: run scripts/build-web (or `npm ci` in web/) so the tests can generate the types they read frames with",
    );
  }
  const staging = join(here, `gen.tmp-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  const run = spawnSync(join(bin, "buf"), ["generate", protoDir, "--template", template, "-o", staging], {
    cwd: here,
    encoding: "utf8",
    env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` },
  });
  if (run.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`buf generate failed (${run.error ?? `exit ${run.status}`}): ${run.stderr}`);
  }
  writeFileSync(join(staging, "gen", "inputs.sha256"), `${hash}\n`);
  rmSync(gen, { recursive: true, force: true });
  renameSync(join(staging, "gen"), gen);
  rmSync(staging, { recursive: true, force: true });
}

ensureGenerated();
// Imported once generated (a static import would be resolved before this module runs).
const client = await import("./gen/hiddenfront/v1/client_pb.js");
const game = await import("./gen/hiddenfront/v1/game_pb.js");

/** The generated modules, for tests that build frames of their own. */
export const generated = { client, game };

/** The paths of fields the generated types did not know, anywhere in `message`. */
function unknownFields(value, path = "") {
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return [];
  if (Array.isArray(value)) return value.flatMap((item, index) => unknownFields(item, `${path}[${index}]`));
  const found = [];
  for (const [key, inner] of Object.entries(value)) {
    if (key === "$unknown") {
      if (inner?.length) found.push(`${path || "."}: fields ${inner.map((field) => field.no).join(", ")}`);
      continue;
    }
    found.push(...unknownFields(inner, `${path}.${key}`));
  }
  return found;
}

/** `bytes` decoded as `schema`, when the message accounts for every byte; throws otherwise. */
function read(schema, bytes) {
  const message = fromBinary(schema, bytes);
  const unknown = unknownFields(message);
  if (unknown.length > 0) throw new Error(`the frame holds fields ${schema.typeName} does not know: ${unknown.join("; ")}`);
  const again = toBinary(schema, message).length;
  if (again !== bytes.length) throw new Error(`${schema.typeName} accounts for ${again} of the frame's ${bytes.length} bytes`);
  return message;
}

/**
 * A frame the server sent: its ServerMessages in the proto3 JSON form (`{ event: {...} }`,
 * `{ answer: { requestId, getGame: {...} } }`, ...), in order. Throws when the frame is not a
 * whole ConnectResponse, or holds no message.
 */
export function readServerFrame(bytes) {
  const response = read(client.ConnectResponseSchema, bytes);
  if (response.messages.length === 0) throw new Error("a ConnectResponse with no message");
  return response.messages.map((message) => toJson(client.ServerMessageSchema, message));
}

/** A frame the page sent: its ConnectRequest in the proto3 JSON form (`{ requestId, play: {...} }`). */
export function readClientFrame(bytes) {
  return toJson(client.ConnectRequestSchema, read(client.ConnectRequestSchema, bytes));
}

/** The subprotocol the page must use. */
export const SUBPROTOCOL = "hiddenfront.connect.v1";
