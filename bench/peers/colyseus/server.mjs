// A minimal Colyseus room for the peer comparison of docs/benchmarks.md ("Current state: what a
// move costs, and a Node.js peer"): the game of game.mjs, in memory, two seats a room. Each move is
// checked (turn, ownership, one step, not onto one's own piece), judged by rank, and answered with
// one message to each seat: the mover's acknowledgement and the opponent's own view of the move,
// neither naming a rank of the other side. When a game ends the room deals a new one and tells each
// seat its own view.
//
//   node server.mjs PORT
import { Room, Server } from "@colyseus/core";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { newGame, play, viewOf } from "./game.mjs";

class DuelRoom extends Room {
  maxClients = 2;

  onCreate() {
    // No synchronised state: every message is sent by hand, per seat, as Hidden Front does.
    this.setPatchRate(null);
    this.seats = [];
    this.game = null;
    this.onMessage("move", (client, message) => this.move(client, message));
  }

  onJoin(client) {
    client.userData = { seat: this.seats.length };
    this.seats.push(client);
    if (this.seats.length === 2) this.deal();
  }

  deal() {
    this.game = newGame();
    for (const [seat, client] of this.seats.entries()) {
      client.send("start", viewOf(this.game, seat));
    }
  }

  move(client, message) {
    const seat = client.userData.seat;
    const { n, from, to } = message ?? {};
    const outcome = this.game === null ? "the game has not started" : play(this.game, seat, from, to);
    if (typeof outcome === "string") {
      client.send("refused", { n, reason: outcome });
      return;
    }
    const { fight, winner, draw } = outcome;
    client.send("ack", { n, from, to, fight, winner, draw });
    const other = this.seats[1 - seat];
    if (other !== undefined) other.send("moved", { from, to, fight, winner, draw });
    if (this.game.ended) this.deal();
  }
}

const port = Number(process.argv[2] ?? 2567);
const server = new Server({ transport: new WebSocketTransport(), greet: false });
server.define("duel", DuelRoom);
await server.listen(port, "127.0.0.1");
console.log(`listening ${port} pid ${process.pid}`);
