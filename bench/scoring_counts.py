"""Counting a body's query terms one by one against counting all its terms (atoms/services/scoring.py
"COUNTED_TERMS").

    .venv/bin/python bench/scoring_counts.py [--repeat 5] [--budget 0.02]

For each number of distinct query terms q and body length n (in terms) it times, in CPU time
(`time.process_time`), the two ways seed_matches gets a body's tf for the asked terms:

- by term: `{term: terms.count(term) for term in asked}`, one C pass over the body per term;
- Counter: `Counter(terms)`, one pass hashing every term.

The body is words drawn from a 2,000-word vocabulary with a Zipf-like skew; half of the query
terms occur in it. The two are alternated within each repeat and the best of `--repeat` is kept,
so a loaded machine slows both alike. It prints per cell the two times in µs and their ratio,
then per q the largest n where counting by term was still faster, and the product q·n there.
"""

from __future__ import annotations

import argparse
import random
import time
import timeit
from collections import Counter

QUERY_TERMS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
BODY_TERMS = [10, 20, 40, 60, 80, 100, 150, 200, 300, 500, 1_000, 3_000, 12_000]


def body(n: int, rng: random.Random) -> tuple[str, ...]:
    vocabulary = [f"word{i}" for i in range(2_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocabulary))]
    # New string objects, as the tokenizer makes them (no identity shortcut in the comparisons).
    return tuple("".join(list(term)) for term in rng.choices(vocabulary, weights, k=n))


def asked(q: int, terms: tuple[str, ...], rng: random.Random) -> list[str]:
    present = list(dict.fromkeys(terms))
    hits = rng.sample(present, min(len(present), (q + 1) // 2))
    return hits + [f"absent{i}" for i in range(q - len(hits))]


def best(statement: object, budget: float) -> float:
    """CPU seconds of one run of `statement`, from as many runs as fit in `budget`."""
    timer = timeit.Timer(statement, timer=time.process_time)  # type: ignore[arg-type]
    number, _ = timer.autorange()
    number = max(1, int(number * budget / 0.2))
    return timer.timeit(number) / number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.02, help="CPU seconds per timing")
    args = parser.parse_args()
    rng = random.Random(7)
    crossover: dict[int, int] = {}
    print(f"{'q':>3} {'n':>6} {'by term µs':>11} {'Counter µs':>11} {'ratio':>6}")
    for q in QUERY_TERMS:
        for n in BODY_TERMS:
            terms = body(n, rng)
            query = asked(q, terms, rng)
            by_term, counter = float("inf"), float("inf")
            for _ in range(args.repeat):
                by_term = min(by_term, best(lambda b=terms, a=query: {t: b.count(t) for t in a}, args.budget))
                counter = min(counter, best(lambda b=terms: Counter(b), args.budget))
            print(f"{q:>3} {n:>6} {by_term * 1e6:>11.2f} {counter * 1e6:>11.2f} {by_term / counter:>6.2f}")
            if by_term < counter:
                crossover[q] = n
    print("largest n where by term was faster, and q·n:")
    for q in QUERY_TERMS:
        n = crossover.get(q, 0)
        print(f"  q={q:>2}: n={n:>6}  q·n={q * n}")


if __name__ == "__main__":
    main()
