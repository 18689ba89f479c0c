"""The sample's planted demonstration topic for the dual_use stage: beekeeping (a harmless stand-in).

Three kinds of pages, so that the quickstart shows a real funnel with the shipped demo term list
(`curate/dualuse/data/demo_terms.txt`):
- `howto`: step-by-step hive work dense with terms: escalated, and what the demo classifier flags
  (it stands in for the operational detail a real dual-use filter removes);
- `story`: news and history that name two or three terms in passing: escalated, then cleared;
- `mention`: an ordinary article with one term: below the escalation threshold.
"""

from __future__ import annotations

import random

from . import text as T

KINDS = ("howto", "story", "mention")
TERMS = ["varroa mite", "queen excluder", "brood comb", "drone comb", "swarm cell", "queen cell", "nurse bees",
         "hive tool", "smoker fuel", "honey super", "bee escape", "frame feeder", "langstroth hive", "uncapping knife",
         "honey extractor", "foundation sheet", "nectar flow", "propolis", "beeswax", "pollen patty", "capped honey",
         "small hive beetle", "wax moth", "oxalic acid treatment", "apiary inspection"]
_STEPS = ["Light the smoker with dry smoker fuel and puff gently at the entrance before you open the {box}.",
          "Use the hive tool to lift the {box} and set it on its end beside the stand.",
          "Check every frame of brood comb for {pest}; a patchy pattern means you should look closer.",
          "Slide the queen excluder under the honey super so the queen cannot climb into the boxes you will harvest.",
          "If you find a {cell} on the bottom bars, split the colony within {days} days or expect a swarm.",
          "Count the varroa mite load on a sugar roll of {n} nurse bees; above nine, plan an oxalic acid treatment.",
          "Warm the uncapping knife in hot water, then run it along the capped honey of each frame.",
          "Spin the frames in the honey extractor for {days} minutes a side and strain the honey through fine mesh.",
          "Replace old drone comb every third season and melt the cut-outs down for beeswax.",
          "Feed a pollen patty through the frame feeder until the nectar flow starts.",
          "Scrape the propolis from the frame rests and look for wax moth in the corners of the {box}."]
_STORY = ["The county fair this year gave its first prize to a jar of {a} from a farm outside {place}.",
          "Old records from {place} describe villagers trading {a} for salt and cloth.",
          "A museum in {place} now shows a {a} that belonged to the town's first keeper.",
          "Local schools visited the orchard, where children learned how {a} is made by the colony.",
          "Historians say the monks of {place} sold {a} candles to pay for the abbey roof."]
_PRODUCTS = ["beeswax", "propolis", "capped honey", "royal jelly", "comb honey"]
_CLOSERS = ["Work calmly and slowly: the bees respond to rough handling.",
            "Write down what you saw in each box so the next inspection starts where this one ended.",
            "Close the hive before the afternoon cools, and leave the entrance reduced if robbing starts."]


def _pick(rng: random.Random, k: int) -> list[str]:
    return rng.sample(TERMS, k)


def howto_page(rng: random.Random) -> str:
    title = f"How to {rng.choice(['inspect', 'split', 'treat', 'harvest', 'requeen'])} a hive: a step-by-step guide"
    steps = []
    for i, template in enumerate(rng.sample(_STEPS, rng.randint(5, 8)), start=1):
        steps.append(f"Step {i}. " + template.format(box=rng.choice(["honey super", "langstroth hive", "top box"]),
                                                    pest=rng.choice(["varroa mite", "small hive beetle", "chalkbrood"]),
                                                    cell=rng.choice(["swarm cell", "queen cell"]),
                                                    days=rng.randint(2, 5), n=rng.choice([200, 300, 400])))
    return title + "\n\n" + "\n".join(steps) + "\n\n" + rng.choice(_CLOSERS)


def story_page(rng: random.Random) -> str:
    base = T.english_article(rng, min_words=120, max_words=300).split("\n\n")
    a, b = rng.sample(_PRODUCTS, 2)
    lines = [rng.choice(_STORY).format(a=a, place=T.place(rng)), rng.choice(_STORY).format(a=b, place=T.place(rng))]
    return "\n\n".join([base[0], lines[0], *base[1:2], lines[1], *base[2:]])


def mention_page(rng: random.Random) -> str:
    base = T.english_article(rng, min_words=150, max_words=400).split("\n\n")
    sentence = f"A neighbour mentioned that {rng.choice(TERMS)} had been on sale at the market."
    return "\n\n".join([base[0], sentence, *base[1:]])


PAGES = {"howto": howto_page, "story": story_page, "mention": mention_page}


def topic_page(rng: random.Random, kind: str) -> str:
    return PAGES[kind](rng)
