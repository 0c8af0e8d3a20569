//! The expert's Gunjin Shogi search three plies deep in each layout ([`super::Terms::deep`]):
//! the seat's move, every answer the opponent may choose, and the seat's best move after it,
//! each leaf judged by the race to an HQ, material counted on the way.
//!
//! The one-reply search ([`super::value`]) and the race look past one answer only with nobody
//! answering, so a race the seat wins on the board can be blocked by a quiet move it does not
//! see. Here the opponent answers with every quiet move, at its best for it in the layout (as
//! if it knew the seat's kinds: the cautious side of the truth), and with the one capture its
//! own view of the seat's pieces chooses ([`super::Terms::opponent_belief`]): it attacks what
//! it can know to be weaker, not what the layout's truth says. The seat's third ply is every
//! legal move, cut off as soon as one reaches what the opponent's earlier answers already hold
//! it to (alpha-beta on the one bound that matters).

use super::{Context, ended, expected_gain, frozen_cost, material, race_lead};
use crate::values::WIN;
use hidden_front_rules::{Family, Move, MoveList, Position, Side};

/// The value of `mv` for the seat (to move in `world`) three plies deep: what it gains, less
/// what the opponent's answer takes, plus the seat's best move after that answer and the race
/// at the leaf.
pub(super) fn value(world: &Position, mv: Move, context: &Context<'_>, lists: &mut Lists) -> f64 {
    let side = context.side;
    let reveal = context.terms.commander_reveal;
    let mut after = *world;
    let Ok(report) = after.play(mv) else {
        return 0.0;
    };
    let mut gained = material(world, &report, side, reveal);
    if let Some(end) = ended(&report, side) {
        return gained + end;
    }
    gained -= frozen_cost(&after, mv, &report);
    gained + answered(&after, context, lists)
}

/// Move lists for each ply, reused across moves and layouts.
#[derive(Default)]
pub(super) struct Lists {
    replies: MoveList,
    follow: MoveList,
}

/// The seat's value of `after` (the opponent to move): the least, over the opponent's answers
/// it may choose, of what the answer takes plus the seat's best move after it.
fn answered(after: &Position, context: &Context<'_>, lists: &mut Lists) -> f64 {
    let side = context.side;
    let reveal = context.terms.commander_reveal;
    after.legal_moves_into(&mut lists.replies);
    let mine = after.occupied(side);
    // The capture the opponent's view chooses (its expected gain is best and above zero).
    let chosen = context.their_view.and_then(|view| {
        let mut best: Option<(f64, Move)> = None;
        for reply in lists.replies.iter() {
            if mine & reply.to.bit() == 0 {
                continue;
            }
            let (Some(attacker), Some(victim)) =
                (after.piece_at(reply.from), after.piece_at(reply.to))
            else {
                continue;
            };
            let expected = expected_gain(
                after,
                attacker.kind,
                view[victim.id.0 as usize],
                context.copies,
            );
            if expected > 0.0 && best.is_none_or(|(e, _)| expected > e) {
                best = Some((expected, reply));
            }
        }
        best.map(|(_, reply)| reply)
    });
    let replies = std::mem::take(&mut lists.replies);
    let mut least = f64::INFINITY;
    let considered = chosen.into_iter().chain(replies.iter().filter(|reply| {
        // Without the opponent's view, every capture is an answer; with it, only the chosen
        // one (which comes first).
        mine & reply.to.bit() == 0 || context.their_view.is_none()
    }));
    for reply in considered {
        let mut next = *after;
        let answer = next.play_legal(reply);
        let mut v = material(after, &answer, side, reveal);
        if let Some(end) = ended(&answer, side) {
            least = least.min(v + end);
            if least <= -WIN {
                break;
            }
            continue;
        }
        v += best_follow(&next, context, &mut lists.follow, least - v);
        least = least.min(v);
    }
    lists.replies = replies;
    if least.is_finite() {
        least
    } else {
        leaf(after, side, context)
    }
}

/// The seat's best move in `pos` (the seat to move) by its material and the leaf after it,
/// stopping as soon as one reaches `enough` (the opponent will not allow more).
fn best_follow(pos: &Position, context: &Context<'_>, moves: &mut MoveList, enough: f64) -> f64 {
    let side = context.side;
    let reveal = context.terms.commander_reveal;
    pos.legal_moves_into(moves);
    // Captures and steps into the enemy HQ first: they reach `enough` soonest. The order
    // changes only how soon the loop stops, not the value the caller keeps.
    let targets = pos.occupied(side.other()) | pos.topology().hq[side.other().index()];
    let striking = moves.iter().filter(|mv| targets & mv.to.bit() != 0);
    let quiet = moves.iter().filter(|mv| targets & mv.to.bit() == 0);
    let mut best = f64::NEG_INFINITY;
    for mv in striking.chain(quiet) {
        let mut next = *pos;
        let report = next.play_legal(mv);
        let mut v = material(pos, &report, side, reveal);
        if let Some(end) = ended(&report, side) {
            v += end;
        } else {
            v += leaf(&next, side, context) - frozen_cost(&next, mv, &report);
        }
        best = best.max(v);
        if best >= enough {
            break;
        }
    }
    if best.is_finite() {
        best
    } else {
        leaf(pos, side, context)
    }
}

/// The seat's value of a leaf (the opponent to move): the race to an HQ, how close its
/// winning pieces stand to the enemy's goal, and the last pieces each side has to move
/// ([`super::Terms::reserve`]).
fn leaf(pos: &Position, side: Side, context: &Context<'_>) -> f64 {
    let mut v = super::PRESS * super::pressure(pos, side, context.distance);
    if pos.rules().family == Family::GunjinShogi && context.terms.race != 0.0 {
        v += context.terms.race * race_lead(pos, side);
    }
    if pos.rules().family == Family::GunjinShogi && context.terms.reserve != 0.0 {
        v -= context.terms.reserve
            * (super::short_of_reserve(pos, side) - super::short_of_reserve(pos, side.other()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::tests::gunjin;
    use super::super::{Context, RESERVE, Scratch, Terms, army_copies};
    use super::*;
    use crate::{ComputerPlayer, Level};
    use hidden_front_rules::Rules;

    /// South's general steps from d6 to d7, next to North's HQ: (the one-reply value, the
    /// three-ply value) of that step, with the expert's terms and no opponent view.
    fn general_to_d7(world: &Position) -> (f64, f64) {
        let rules = *world.rules();
        let node = |square: &str| rules.topology().node(square).unwrap();
        let player = ComputerPlayer::with_level(Side::South, rules, Level::Expert, 1);
        let context = Context {
            side: Side::South,
            distance: &player.distance,
            terms: Terms::EXPERT,
            their_view: None,
            copies: &army_copies(&rules),
        };
        let step = Move {
            from: node("d6"),
            to: node("d7"),
        };
        (
            super::super::value(world, step, &context, &mut Scratch::default()),
            value(world, step, &context, &mut Lists::default()),
        )
    }

    #[test]
    fn the_leaf_counts_each_side_s_last_pieces_in_the_field_and_not_the_hq_keeper() {
        let rules = Rules::parse("gunjin-shogi").unwrap();
        let player = ComputerPlayer::with_level(Side::South, rules, Level::Expert, 1);
        let copies = army_copies(&rules);
        let leaf_with = |pos: &Position, reserve: f64| {
            let context = Context {
                side: Side::South,
                distance: &player.distance,
                terms: Terms {
                    reserve,
                    ..Terms::EXPERT
                },
                their_view: None,
                copies: &copies,
            };
            leaf(pos, Side::South, &context)
        };
        // South: a general in its own HQ (walled in or not, it counts for none) and one
        // captain in the field, two short; North: three captains, none short. Mines and flags
        // never count.
        let south_short = gunjin(&[
            ("a1", Side::South, "FLG"),
            ("b1", Side::South, "MIN"),
            ("d1+e1", Side::South, "GEN"),
            ("a3", Side::South, "CPT"),
            ("h8", Side::North, "FLG"),
            ("a6", Side::North, "CPT"),
            ("b6", Side::North, "CPT"),
            ("c6", Side::North, "CPT"),
        ]);
        let charged = leaf_with(&south_short, RESERVE) - leaf_with(&south_short, 0.0);
        assert_eq!(charged, -2.0 * RESERVE);
        // Both sides short by one: the terms cancel.
        let even = gunjin(&[
            ("a1", Side::South, "FLG"),
            ("a3", Side::South, "CPT"),
            ("b3", Side::South, "CPT"),
            ("h8", Side::North, "FLG"),
            ("a6", Side::North, "CPT"),
            ("b6", Side::North, "CPT"),
        ]);
        assert_eq!(leaf_with(&even, RESERVE), leaf_with(&even, 0.0));
        // North short by three (nothing in the field): counted for South.
        let north_bare = gunjin(&[
            ("a1", Side::South, "FLG"),
            ("a3", Side::South, "CPT"),
            ("b3", Side::South, "CPT"),
            ("c3", Side::South, "CPT"),
            ("h8", Side::North, "FLG"),
            ("d8+e8", Side::North, "MJG"),
        ]);
        let gained = leaf_with(&north_bare, RESERVE) - leaf_with(&north_bare, 0.0);
        assert_eq!(gained, 3.0 * RESERVE);
    }

    #[test]
    fn three_plies_see_the_quiet_answer_that_blocks_a_race_and_the_entry_nobody_can_block() {
        let flags = [("a1", Side::South, "FLG"), ("h8", Side::North, "FLG")];
        // Nobody can stop the general (North's captain is far away): the three plies find the
        // entry into the HQ.
        let open = gunjin(
            &[
                &flags[..],
                &[("d6", Side::South, "GEN"), ("h5", Side::North, "CPT")],
            ]
            .concat(),
        );
        let (one_reply, three_plies) = general_to_d7(&open);
        assert!(three_plies >= WIN, "{three_plies}");
        assert!(one_reply < WIN, "{one_reply}");
        // North's general on c8 steps into its HQ, where South's general can only trade: the
        // race the one-reply search counts in full (a lead of four moves) is gone.
        let blocked = gunjin(
            &[
                &flags[..],
                &[("d6", Side::South, "GEN"), ("c8", Side::North, "GEN")],
            ]
            .concat(),
        );
        let (one_reply, three_plies) = general_to_d7(&blocked);
        assert!(one_reply >= 4.0 * super::super::RACE, "{one_reply}");
        assert!(three_plies < super::super::RACE, "{three_plies}");
    }
}
