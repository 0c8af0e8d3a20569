/**
 * The WebSocket operations, each tied to its generated proto request and response schema, so
 * every message the page sends or reads is the proto message in canonical JSON (docs/websocket.md),
 * checked by the generated (de)serialisation rather than by hand-copied types.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import * as c from "../gen/hiddenfront/v1/client_pb.js";

/** Request and response JSON types of every operation the page uses. */
export interface Ops {
  subscribe: [c.SubscribeRequestJson, Record<string, never>];
  get_game: [c.PlayerServiceGetGameRequestJson, c.PlayerServiceGetGameResponseJson];
  list_my_games: [c.ListMyGamesRequestJson, c.ListMyGamesResponseJson];
  reshuffle: [c.ReshuffleRequestJson, c.ReshuffleResponseJson];
  swap: [c.SwapRequestJson, c.SwapResponseJson];
  confirm: [c.ConfirmRequestJson, c.ConfirmResponseJson];
  play: [c.PlayRequestJson, c.PlayResponseJson];
  propose_draw: [c.ProposeDrawRequestJson, c.ProposeDrawResponseJson];
  respond_draw: [c.RespondDrawRequestJson, c.RespondDrawResponseJson];
  concede: [c.ConcedeRequestJson, c.ConcedeResponseJson];
  find_match: [c.FindMatchRequestJson, c.FindMatchResponseJson];
  cancel_match: [c.CancelMatchRequestJson, c.CancelMatchResponseJson];
  create_invite: [c.PlayerServiceCreateInviteRequestJson, c.PlayerServiceCreateInviteResponseJson];
  accept_invite: [c.PlayerServiceAcceptInviteRequestJson, c.PlayerServiceAcceptInviteResponseJson];
  cancel_invite: [c.PlayerServiceCancelInviteRequestJson, c.PlayerServiceCancelInviteResponseJson];
  play_computer: [c.PlayerServicePlayComputerRequestJson, c.PlayerServicePlayComputerResponseJson];
  get_my_rating: [c.GetMyRatingRequestJson, c.GetMyRatingResponseJson];
  watch_lobby: [c.WatchLobbyRequestJson, Record<string, never>];
  export_replay: [c.ExportReplayRequestJson, c.ExportReplayResponseJson];
}

/** An operation's `type` name. */
export type Op = keyof Ops;
/** The request JSON of an operation. */
export type Req<O extends Op> = Ops[O][0];
/** The response JSON of an operation. */
export type Res<O extends Op> = Ops[O][1];

/** The generated schema of each operation's request and (for non-streams) response. */
export const schemas: { [O in Op]: [DescMessage, DescMessage | null] } = {
  subscribe: [c.SubscribeRequestSchema, null],
  get_game: [c.PlayerServiceGetGameRequestSchema, c.PlayerServiceGetGameResponseSchema],
  list_my_games: [c.ListMyGamesRequestSchema, c.ListMyGamesResponseSchema],
  reshuffle: [c.ReshuffleRequestSchema, c.ReshuffleResponseSchema],
  swap: [c.SwapRequestSchema, c.SwapResponseSchema],
  confirm: [c.ConfirmRequestSchema, c.ConfirmResponseSchema],
  play: [c.PlayRequestSchema, c.PlayResponseSchema],
  propose_draw: [c.ProposeDrawRequestSchema, c.ProposeDrawResponseSchema],
  respond_draw: [c.RespondDrawRequestSchema, c.RespondDrawResponseSchema],
  concede: [c.ConcedeRequestSchema, c.ConcedeResponseSchema],
  find_match: [c.FindMatchRequestSchema, c.FindMatchResponseSchema],
  cancel_match: [c.CancelMatchRequestSchema, c.CancelMatchResponseSchema],
  create_invite: [c.PlayerServiceCreateInviteRequestSchema, c.PlayerServiceCreateInviteResponseSchema],
  accept_invite: [c.PlayerServiceAcceptInviteRequestSchema, c.PlayerServiceAcceptInviteResponseSchema],
  cancel_invite: [c.PlayerServiceCancelInviteRequestSchema, c.PlayerServiceCancelInviteResponseSchema],
  play_computer: [c.PlayerServicePlayComputerRequestSchema, c.PlayerServicePlayComputerResponseSchema],
  get_my_rating: [c.GetMyRatingRequestSchema, c.GetMyRatingResponseSchema],
  watch_lobby: [c.WatchLobbyRequestSchema, null],
  export_replay: [c.ExportReplayRequestSchema, c.ExportReplayResponseSchema],
};
