"""Which members of a duplicate cluster may go: each only for a kept member it is a near-duplicate of.

Members come sorted by (component, rank); signatures give estimates (the fraction of equal MinHash slots).
Each round, the best-ranked unsettled member of every component is its representative; the round keeps it and
what the policy keeps with it (`cross_source`: the unsettled members of its source; `all`: nothing else).
Every other unsettled member (`cross_source`: of a lower source; `all`: ranked below) is compared with those
kept documents (the best-ranked `max_kept` of them):

- a *sure* match (estimate >= threshold + margin) with a kept member that is settled removes it;
- a *close* match (within the margin) becomes a candidate for the exact check; so does a match with a kept
  member that is itself waiting for its checks (it is removed in that one's favour only if that one stays;
  a sure one of those is not replaced by a later round's, which would be of a lower rank, less likely to stay);
- no match leaves it for the next round, where it may be compared again, or kept (a sub-cluster of its own).

A member with candidates waits (CHECK) and keeps being compared in later rounds; `finish` decides once the
exact Jaccards are known, from the worst-ranked member up, so every removed member's partner is kept. What
is still unsettled after the last round is kept. Work per cluster: at most rounds x members x max_kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KEPT, REMOVED, CHECK = 0, 1, 2
CHUNK = 1 << 13     # pairs of signature rows compared at once: 8 MiB of rows at 128 slots
MAX_KEPT = 32       # kept documents of a round that each member is compared with, at most
CHUNK_PAIRS = 1 << 18   # (member, kept) pairs of one round handled at once: ~10 MiB of temporaries


@dataclass
class Settled:
    """Per member: `rep` (an index; itself for a representative) and `sim`: the evidence so far; `fate`;
    the candidates of a waiting member: `solid` (a kept member, close: needs the exact check) and `wait`
    (a waiting member; `wait_sure`: no exact check needed), -1 where none, with their estimates."""

    rep: np.ndarray
    sim: np.ndarray
    fate: np.ndarray
    solid: np.ndarray
    solid_sim: np.ndarray
    wait: np.ndarray
    wait_sim: np.ndarray
    wait_sure: np.ndarray


def equal_fraction(sig: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Fraction of equal slots between signature rows a[i] and b[i]: the MinHash estimate of their Jaccard."""
    out = np.empty(len(a), np.float32)
    for i in range(0, len(a), CHUNK):
        out[i:i + CHUNK] = (sig[a[i:i + CHUNK]] == sig[b[i:i + CHUNK]]).mean(axis=1)
    return out


def _best(score: np.ndarray, partner: np.ndarray, starts: np.ndarray, count: np.ndarray):
    """Per member (pairs contiguous from `starts`): the best score and the first partner with it."""
    best = np.maximum.reduceat(score, starts)
    hit = np.flatnonzero(score == np.repeat(best, count))
    return best, partner[hit[np.searchsorted(hit, starts)]]


def settle_members(comp: np.ndarray, priority: np.ndarray, sig: np.ndarray, policy: str, threshold: float,
                   margin: float, rounds: int, max_kept: int = MAX_KEPT, fixed: np.ndarray | None = None,
                   chunk_pairs: int = CHUNK_PAIRS) -> Settled:
    """`fixed`: members that are kept whenever a round reaches them, never compared (frozen documents, sorted first).
    `chunk_pairs`: (member, kept) pairs compared at once: a giant cluster's temporaries stay within about
    chunk_pairs x 40 bytes instead of growing with members x max_kept (the result is the same for any value)."""
    n = len(comp)
    s = Settled(np.arange(n), np.ones(n, np.float32), np.full(n, KEPT, np.int8), np.full(n, -1), np.full(n, -1.0, np.float32),
                np.full(n, -1), np.full(n, -1.0, np.float32), np.zeros(n, bool))
    pending = np.ones(n, bool)
    cross = policy == "cross_source"
    for _ in range(rounds):
        idx = np.flatnonzero(pending)
        if not len(idx):
            break
        grp = np.cumsum(np.r_[True, comp[idx][1:] != comp[idx][:-1]]) - 1
        head = idx[np.searchsorted(grp, grp)]
        keeps = (idx == head) | (cross & (priority[idx] == priority[head]))
        if fixed is not None:
            keeps |= fixed[idx]
        fresh = keeps & (s.fate[idx] != CHECK)             # a waiting member keeps its evidence
        s.rep[idx[fresh]], s.sim[idx[fresh]] = head[fresh], equal_fraction(sig, idx[fresh], head[fresh])
        pending[idx[keeps]] = False
        k_idx, k_grp = idx[keeps], grp[keeps]
        cap = np.arange(len(k_idx)) - np.searchsorted(k_grp, k_grp) < max_kept
        k_idx, k_grp = k_idx[cap], k_grp[cap]
        r_idx, r_grp = idx[~keeps], grp[~keeps]
        kept_of = np.bincount(k_grp, minlength=grp[-1] + 1)
        step = max(1, chunk_pairs // max(1, max_kept))
        for lo in range(0, len(r_idx), step):   # members are compared independently: in chunks, the same result
            _compare(s, sig, pending, r_idx[lo:lo + step], r_grp[lo:lo + step], k_idx, k_grp, kept_of, threshold, margin)
    return s


def _compare(s: Settled, sig: np.ndarray, pending: np.ndarray, r_idx: np.ndarray, r_grp: np.ndarray, k_idx: np.ndarray,
             k_grp: np.ndarray, kept_of: np.ndarray, threshold: float, margin: float) -> None:
    """One round's comparisons of members `r_idx` (of components `r_grp`) with their component's kept members
    (`k_idx` by `k_grp`; `kept_of`: how many per component). Reads only kept members' state, writes only
    these members': any split of the members gives the same result."""
    if not len(r_idx):
        return
    count = kept_of[r_grp]
    starts = np.cumsum(count) - count
    partner = k_idx[np.repeat(np.searchsorted(k_grp, r_grp) - starts, count) + np.arange(count.sum())]
    est = equal_fraction(sig, np.repeat(r_idx, count), partner)
    waiting_partner = s.fate[partner] == CHECK
    best_s, part_s = _best(np.where(waiting_partner, np.float32(-1), est), partner, starts, count)
    best_w, part_w = _best(np.where(waiting_partner, est, np.float32(-1)), partner, starts, count)
    sure = best_s >= threshold + margin
    close = ~sure & (best_s >= threshold - margin) & (best_s > s.solid_sim[r_idx])
    lean = ~sure & (best_w >= threshold - margin) & (best_w > s.wait_sim[r_idx]) & ~s.wait_sure[r_idx]
    s.solid[r_idx[close]], s.solid_sim[r_idx[close]] = part_s[close], best_s[close]
    s.wait[r_idx[lean]], s.wait_sim[r_idx[lean]] = part_w[lean], best_w[lean]
    s.wait_sure[r_idx[lean]] = best_w[lean] >= threshold + margin
    s.fate[r_idx[close | lean]] = CHECK
    s.fate[r_idx[sure]] = REMOVED
    s.rep[r_idx[sure]], s.sim[r_idx[sure]] = part_s[sure], best_s[sure]
    pending[r_idx[sure]] = False
    plain = s.fate[r_idx] == KEPT                       # evidence of a member left for later: its best match
    best, part = np.where(best_s >= best_w, best_s, best_w), np.where(best_s >= best_w, part_s, part_w)
    s.rep[r_idx[plain]], s.sim[r_idx[plain]] = part[plain], best[plain]


def finish(s: Settled, solid_passed: np.ndarray, wait_passed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(removed, partner) once the exact checks are known (`*_passed`: the candidate's exact Jaccard reaches the
    threshold). From the worst-ranked member up (a partner is always better-ranked): a waiting member that another
    removal relies on stays; otherwise it goes for its settled candidate if that passed, else for its waiting
    candidate (sure, or passed), which then must stay."""
    gone = s.fate == REMOVED
    rep = s.rep.copy()
    needed = np.zeros(len(gone), bool)
    for i in np.flatnonzero(s.fate == CHECK)[::-1].tolist():
        if needed[i]:
            continue
        if s.solid[i] >= 0 and solid_passed[i]:
            gone[i], rep[i] = True, s.solid[i]
        elif s.wait[i] >= 0 and (s.wait_sure[i] or wait_passed[i]):
            gone[i], rep[i] = True, s.wait[i]
            needed[s.wait[i]] = True
    return gone, rep
