"""Synthetic text for the sample corpus.

Everything here is generated from small inline word lists and templates, so the
sample corpus needs no downloads and is reproducible from a seed.  Every
generator takes an explicit ``random.Random`` so callers control determinism.

Three families of text are produced:

* articles: English prose that web-quality heuristics (Gopher, C4) should keep,
  and short pages in German, French, Spanish, Russian and Chinese;
* junk: the kinds of pages those heuristics exist to remove;
* boilerplate and variant transforms: what differs between two extractions of
  one page, used to plant near-duplicates.
"""

from __future__ import annotations

import random
import re

# --------------------------------------------------------------------------
# English vocabulary.  Topic words make articles on different subjects share
# few phrases; general words keep the stop-word profile of normal prose.
# --------------------------------------------------------------------------

TOPICS: dict[str, tuple[list[str], list[str]]] = {
    "astronomy": (
        ["planet", "telescope", "orbit", "comet", "galaxy", "star", "moon",
         "eclipse", "observatory", "asteroid", "nebula", "satellite"],
        ["orbital", "distant", "luminous", "celestial"]),
    "gardening": (
        ["seedling", "compost", "soil", "hedge", "orchard", "tomato", "root",
         "blossom", "greenhouse", "trellis", "mulch", "pollinator"],
        ["perennial", "fertile", "shaded", "organic"]),
    "cooking": (
        ["recipe", "spice", "oven", "broth", "dough", "sauce", "kitchen",
         "ingredient", "flavor", "grain", "skillet", "pastry"],
        ["savory", "crisp", "fragrant", "homemade"]),
    "economics": (
        ["price", "wage", "tax", "investment", "inflation", "trade", "loan",
         "currency", "household", "supply", "demand", "bank"],
        ["fiscal", "monetary", "competitive", "financial"]),
    "climate": (
        ["glacier", "drought", "rainfall", "emission", "forest", "temperature",
         "ocean", "storm", "wetland", "carbon", "heatwave", "ecosystem"],
        ["atmospheric", "arid", "humid", "polar"]),
    "computing": (
        ["algorithm", "processor", "database", "server", "program", "network",
         "compiler", "keyboard", "protocol", "interface", "memory", "browser"],
        ["parallel", "binary", "automated", "secure"]),
    "history": (
        ["empire", "treaty", "manuscript", "dynasty", "settlement", "castle",
         "revolution", "merchant", "chronicle", "monument", "kingdom", "war"],
        ["medieval", "colonial", "imperial", "forgotten"]),
    "health": (
        ["vaccine", "nutrient", "muscle", "heart", "clinic", "patient",
         "symptom", "diet", "hospital", "nurse", "infection", "therapy"],
        ["chronic", "clinical", "preventive", "medical"]),
    "music": (
        ["melody", "rhythm", "orchestra", "guitar", "chorus", "composer",
         "violin", "concert", "harmony", "drum", "album", "symphony"],
        ["acoustic", "melodic", "lyrical", "orchestral"]),
    "oceans": (
        ["reef", "whale", "coral", "plankton", "tide", "harbor", "current",
         "shark", "lagoon", "kelp", "fishery", "shoreline"],
        ["marine", "tidal", "saline", "deep"]),
    "architecture": (
        ["facade", "column", "arch", "roof", "courtyard", "cathedral",
         "staircase", "window", "tower", "beam", "dome", "balcony"],
        ["gothic", "structural", "ornate", "vernacular"]),
    "geology": (
        ["volcano", "mineral", "fossil", "sediment", "canyon", "earthquake",
         "crystal", "glacier", "plate", "lava", "quarry", "cave"],
        ["volcanic", "tectonic", "granite", "layered"]),
    "psychology": (
        ["emotion", "behavior", "motivation", "perception", "attention",
         "childhood", "stress", "instinct", "belief", "personality",
         "conversation", "routine"],
        ["cognitive", "emotional", "conscious", "mental"]),
    "agriculture": (
        ["harvest", "wheat", "tractor", "irrigation", "cattle", "farmer",
         "barn", "pasture", "fertilizer", "crop", "seed", "vineyard"],
        ["agricultural", "irrigated", "dry", "rotational"]),
    "transport": (
        ["railway", "highway", "bicycle", "airport", "ferry", "tram", "truck",
         "canal", "station", "passenger", "freight", "timetable"],
        ["electric", "congested", "regional", "overnight"]),
}

NOUNS = [
    "system", "process", "community", "method", "approach", "change",
    "pattern", "resource", "question", "problem", "history", "example",
    "structure", "practice", "region", "policy", "study", "theory", "tool",
    "material", "feature", "result", "factor", "decision", "balance", "skill",
    "habit", "model", "record", "signal", "surface", "limit", "measure",
    "source", "path", "season", "village", "market", "tradition", "family",
    "teacher", "student", "library", "museum", "journey", "garden", "river",
    "island", "valley", "bridge", "engine", "language", "culture",
    "experiment", "observation", "framework", "budget", "habitat",
    "landscape", "collection", "instrument", "festival", "archive",
    "neighborhood", "generation", "document", "effort", "opportunity",
]

VERBS = [
    "shape", "support", "reveal", "describe", "explain", "improve", "reduce",
    "increase", "affect", "influence", "protect", "measure", "record",
    "examine", "create", "build", "connect", "define", "encourage", "limit",
    "require", "produce", "transform", "replace", "follow", "guide",
    "strengthen", "challenge", "store", "carry", "move", "control", "provide",
    "include", "combine", "test", "track", "organize", "compare", "predict",
    "preserve", "expand", "absorb", "release", "sustain", "highlight",
    "illustrate", "determine", "find", "keep", "make", "take", "study",
    "change", "reflect",
]

_IRREGULAR = {
    "build": ("builds", "built", "built"),
    "find": ("finds", "found", "found"),
    "keep": ("keeps", "kept", "kept"),
    "make": ("makes", "made", "made"),
    "take": ("takes", "took", "taken"),
    "control": ("controls", "controlled", "controlled"),
}

ADJECTIVES = [
    "important", "significant", "complex", "simple", "early", "modern",
    "ancient", "local", "global", "natural", "careful", "effective", "common",
    "rare", "steady", "gradual", "rapid", "practical", "useful", "broad",
    "narrow", "healthy", "fragile", "durable", "seasonal", "coastal", "urban",
    "rural", "traditional", "historical", "detailed", "reliable", "efficient",
    "essential", "remarkable", "subtle", "visible", "hidden", "distinct",
    "shared", "public", "private", "scientific", "economic", "social",
    "cultural", "physical", "digital", "renewable", "typical", "unusual",
    "small", "large", "new", "old", "young", "quiet",
]

ADVERBS = [
    "often", "usually", "rarely", "gradually", "quickly", "carefully",
    "slowly", "steadily", "largely", "partly", "clearly", "directly",
    "mostly", "sometimes", "frequently", "eventually", "naturally",
    "consistently", "effectively", "significantly", "recently",
    "historically", "increasingly", "generally", "typically",
]

CONNECTORS = [
    "However", "In addition", "As a result", "For example", "In many cases",
    "At the same time", "Over time", "In practice", "For this reason",
    "On the other hand", "In contrast", "Today", "Historically", "Meanwhile",
    "Even so", "In recent years", "Not surprisingly", "By comparison",
    "Later", "In general", "Of course", "Still",
]

PREPOSITIONS = [
    "in", "across", "within", "for", "during", "near", "through", "without",
    "after", "before", "along", "beyond", "under", "around", "between",
]

FIRST_NAMES = [
    "Maria", "James", "Aisha", "Daniel", "Elena", "Samuel", "Grace", "Omar",
    "Lucy", "Henry", "Priya", "Thomas", "Nadia", "Victor", "Helen", "Arjun",
    "Clara", "Martin", "Sofia", "Peter", "Leila", "George", "Irene", "Hugo",
]

SURNAMES = [
    "Holloway", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Brennan",
    "Castillo", "Whitfield", "Novak", "Adeyemi", "Fischer", "Delgado",
    "Harrington", "Kowalski", "Mendel", "Ashworth", "Rahman", "Sorensen",
    "Bellamy", "Quinlan", "Marsh", "Petrov", "Achebe", "Langley",
]

_PLACE_HEADS = ["North", "Clear", "Red", "Stone", "Oak", "Silver", "Green",
                "East", "Maple", "High", "Black", "Fair", "Cold", "Ash"]
_PLACE_TAILS = ["field", "ford", "haven", "brook", "ridge", "wood", "port",
                "vale", "moor", "bury", "dale", "water", "wick", "mouth"]

_TLDS = ["com", "org", "net", "info", "co.uk", "edu", "io", "blog"]


def plural(noun: str) -> str:
    """Regular English plural; the word lists avoid irregular nouns."""
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def verb_forms(base: str) -> tuple[str, str, str]:
    """(third person singular, past, participle) of a verb."""
    if base in _IRREGULAR:
        return _IRREGULAR[base]
    if base.endswith("y") and base[-2:-1] not in "aeiou":
        return base[:-1] + "ies", base[:-1] + "ied", base[:-1] + "ied"
    if base.endswith(("s", "x", "ch", "sh")):
        return base + "es", base + "ed", base + "ed"
    if base.endswith("e"):
        return base + "s", base + "d", base + "d"
    return base + "s", base + "ed", base + "ed"


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(SURNAMES)}"


def place(rng: random.Random) -> str:
    return rng.choice(_PLACE_HEADS) + rng.choice(_PLACE_TAILS)


def site_name(rng: random.Random) -> str:
    """A made-up site name such as 'QuietRiverJournal'."""
    suffix = rng.choice(["", "Daily", "Journal", "Hub", "Online", "Guide",
                         "Times", "Notes", "World", "Review"])
    return (rng.choice(ADJECTIVES).capitalize() + rng.choice(NOUNS).capitalize()
            + suffix)


def make_url(rng: random.Random, site: str | None = None) -> str:
    """A plausible page URL; the random slug keeps URLs unique in practice."""
    host = (site or site_name(rng)).lower()
    words = [rng.choice(NOUNS) for _ in range(rng.randint(2, 4))]
    slug = "-".join(words) + f"-{rng.randint(100, 99999)}"
    section = rng.choice(["articles", "blog", "news", "learn", "posts", "p",
                          "stories", "guides"])
    return f"https://www.{host}.{rng.choice(_TLDS)}/{section}/{slug}"


# --------------------------------------------------------------------------
# English articles.
# --------------------------------------------------------------------------

class _ArticleWriter:
    """Sentence templates over one topic, with a few named people and places.

    Names, numbers and years are drawn per article, so unrelated articles share
    few long character n-grams even though the vocabulary is small.
    """

    def __init__(self, rng: random.Random, topic: str):
        self.rng = rng
        self.topic = topic
        self.topic_nouns, self.topic_adjs = TOPICS[topic]
        self.people = [person(rng) for _ in range(3)]
        self.places = [place(rng) for _ in range(2)]
        self.institution = rng.choice([
            f"the University of {self.places[0]}",
            f"the {self.places[0]} Institute",
            f"the {self.places[1]} Historical Society",
            f"the National {topic.capitalize()} Council",
        ])

    # -- phrases ----------------------------------------------------------
    def noun(self) -> str:
        pool = self.topic_nouns if self.rng.random() < 0.5 else NOUNS
        return self.rng.choice(pool)

    def adj(self) -> str:
        pool = self.topic_adjs if self.rng.random() < 0.3 else ADJECTIVES
        return self.rng.choice(pool)

    def np(self, plural_form: bool = False) -> str:
        r = self.rng
        head = self.noun()
        if r.random() < 0.4:
            head = f"{self.adj()} {head}"
        if plural_form:
            head = head.rsplit(" ", 1)
            head = " ".join(head[:-1] + [plural(head[-1])])
            det = r.choice(["the", "many", "some", "most", "these", "those",
                            "several", "their", "our", "", ""])
        else:
            det = r.choice(["the", "the", "the", "a", "this", "that", "each",
                            "every", "its", "their", "one"])
            if det == "a" and head[0] in "aeiou":
                det = "an"
        phrase = f"{det} {head}".strip()
        if r.random() < 0.2:
            phrase += f" of the {self.noun()}"
        return phrase

    def subject(self) -> tuple[str, bool]:
        """A subject phrase and whether it is plural."""
        r = self.rng.random()
        if r < 0.12:
            return self.rng.choice(self.people), False
        if r < 0.2:
            return self.rng.choice(["researchers", "local residents", "experts",
                                    "students", "visitors", "engineers",
                                    "historians", "families"]), True
        plural_form = self.rng.random() < 0.4
        return self.np(plural_form), plural_form

    def verb(self, plural_form: bool, tense: str = "present") -> str:
        base = self.rng.choice(VERBS)
        third, past, _ = verb_forms(base)
        if tense == "past":
            return past
        return base if plural_form else third

    def pp(self) -> str:
        if self.rng.random() < 0.55:
            return ""
        if self.rng.random() < 0.25:
            return f" in {self.rng.choice(self.places)}"
        return f" {self.rng.choice(PREPOSITIONS)} {self.np(self.rng.random() < 0.3)}"

    def clause(self, tense: str = "present") -> str:
        subj, pl = self.subject()
        adv = f"{self.rng.choice(ADVERBS)} " if self.rng.random() < 0.25 else ""
        return f"{subj} {adv}{self.verb(pl, tense)} {self.np(self.rng.random() < 0.35)}{self.pp()}"

    # -- sentences --------------------------------------------------------
    def sentence(self) -> str:
        r = self.rng
        n = r.randint(0, 17)
        c = self.clause
        if n == 0:
            s = f"{r.choice(CONNECTORS)}, {c()}."
        elif n == 1:
            s = f"{c()}, and {c()}."
        elif n == 2:
            s = f"Although {c()}, {c()}."
        elif n == 3:
            s = (f"According to {r.choice(self.people)}, {c()} by about "
                 f"{r.randint(3, 80)} percent.")
        elif n == 4:
            s = f"In {r.randint(1650, 2023)}, {c('past')}."
        elif n == 5:
            subj, pl = self.subject()
            s = (f"{subj}, which {self.verb(pl)} {self.np()}, "
                 f"{r.choice(ADVERBS)} {self.verb(pl)} {self.np(True)}.")
        elif n == 6:
            subj, pl = self.subject()
            aux = "do" if pl else "does"
            s = f"Why {aux} {subj} {r.choice(VERBS)} {self.np()}?"
        elif n == 7:
            s = f"{r.choice(self.people)} noted that {c()}."
        elif n == 8:
            s = f"Studies at {self.institution} suggest that {c()}."
        elif n == 9:
            s = f"This {self.noun()} {self.verb(False)} {self.np()} because {c()}."
        elif n == 10:
            s = (f"There are at least {r.randint(2, 40)} {plural(self.noun())}"
                 f"{self.pp()}, and each one {self.verb(False)} {self.np()}.")
        elif n == 11:
            s = f"{c()}; {c()}."
        elif n == 12:
            subj, pl = self.subject()
            aux = "have" if pl else "has"
            part = verb_forms(r.choice(VERBS))[2]
            s = (f"Over the past {r.randint(2, 60)} years, {subj} {aux} "
                 f"{part} {self.np(True)}{self.pp()}.")
        elif n == 13:
            s = f"The {self.adj()} {self.noun()} of {self.np()} {self.verb(False)} {self.np()}{self.pp()}."
        elif n == 14:
            s = f"{c()} when {c()}."
        elif n == 15:
            quote = c()
            s = f'As {r.choice(self.people)} put it, "{quote[0].upper()}{quote[1:]}."'
        elif n == 16:
            s = f"It is {r.choice(ADJECTIVES)} to {r.choice(VERBS)} {self.np()} before {c()}."
        else:
            s = f"{c()}."
        return s[0].upper() + s[1:]

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 7)))

    def title(self) -> str:
        r = self.rng
        a, n1, n2 = self.adj().capitalize(), self.noun(), self.noun()
        forms = [
            f"Understanding {a} {plural(n1).capitalize()}",
            f"A Short Guide to {plural(n1).capitalize()} and {plural(n2).capitalize()}",
            f"How {plural(n1).capitalize()} Shape the {n2.capitalize()}",
            f"The {a} {n1.capitalize()} of {self.places[0]}",
            f"What Every Student Should Know About {plural(n1).capitalize()}",
            f"{self.topic.capitalize()}: {a} {plural(n1).capitalize()} Explained",
        ]
        return r.choice(forms)


def english_article(rng: random.Random, min_words: int = 150,
                    max_words: int = 900) -> str:
    """A titled multi-paragraph article of about min_words..max_words words."""
    writer = _ArticleWriter(rng, rng.choice(sorted(TOPICS)))
    target = int(rng.triangular(min_words, max_words, min_words + (max_words - min_words) * 0.3))
    paragraphs, words = [], 0
    while words < target or len(paragraphs) < 3:
        p = writer.paragraph()
        paragraphs.append(p)
        words += p.count(" ") + 1
    sep = "\n\n" if rng.random() < 0.8 else "\n"
    return writer.title() + "\n\n" + sep.join(paragraphs)


# --------------------------------------------------------------------------
# Non-English pages: subject + verb + object + adverbial templates.
# --------------------------------------------------------------------------

_FOREIGN = {
    "de": {
        "subj": ["die Stadt", "der Lehrer", "das Kind", "die Regierung",
                 "der Wissenschaftler", "die Familie", "das Unternehmen",
                 "der Arzt", "die Schule", "das Museum", "die Forschung",
                 "der Bauer", "die Gemeinde", "unser Verein"],
        "verb": ["hat", "braucht", "zeigt", "findet", "baut", "kennt", "sucht",
                 "erklärt", "beschreibt", "verändert", "schützt",
                 "unterstützt", "plant", "öffnet"],
        "obj": ["eine neue Brücke", "den alten Wald", "viele Bücher",
                "die Geschichte der Region", "einen langen Weg", "das Wasser",
                "mehr Zeit", "die Ergebnisse", "neue Ideen", "den Garten",
                "die Umwelt", "das Wetter", "ein kleines Haus",
                "die Arbeit der Menschen"],
        "tail": ["seit vielen Jahren", "jeden Tag", "im Sommer",
                 "in der Nähe des Sees", "mit großer Sorgfalt",
                 "ohne Probleme", "auch heute noch", "nach dem Krieg",
                 "für die Zukunft", "am Wochenende", "im Winter",
                 "in der ganzen Welt"],
        "conn": ["Außerdem", "Deshalb", "Trotzdem", "Heute", "Früher",
                 "Manchmal", "Oft"],
        "and": ["und", "aber", "denn"],
        "inverted": True,
    },
    "fr": {
        "subj": ["la ville", "le professeur", "l'enfant", "le gouvernement",
                 "la famille", "l'entreprise", "le médecin", "l'école",
                 "le musée", "la recherche", "le paysan", "la commune",
                 "notre association", "le chercheur"],
        "verb": ["a", "construit", "montre", "cherche", "explique", "décrit",
                 "change", "protège", "soutient", "trouve", "connaît",
                 "prépare", "ouvre", "organise"],
        "obj": ["un nouveau pont", "la vieille forêt", "beaucoup de livres",
                "l'histoire de la région", "un long chemin", "de l'eau",
                "plus de temps", "les résultats", "de nouvelles idées",
                "le jardin", "l'environnement", "le climat",
                "une petite maison", "le travail des habitants"],
        "tail": ["depuis de nombreuses années", "chaque jour", "en été",
                 "près du lac", "avec beaucoup de soin", "sans problème",
                 "encore aujourd'hui", "après la guerre", "pour l'avenir",
                 "le week-end", "en hiver", "dans le monde entier"],
        "conn": ["De plus,", "C'est pourquoi", "Pourtant,", "Aujourd'hui,",
                 "Autrefois,", "Parfois,", "Souvent,"],
        "and": ["et", "mais", "car"],
        "inverted": False,
    },
    "es": {
        "subj": ["la ciudad", "el profesor", "el niño", "el gobierno",
                 "la familia", "la empresa", "el médico", "la escuela",
                 "el museo", "la investigación", "el campesino",
                 "el ayuntamiento", "nuestra asociación", "la científica"],
        "verb": ["tiene", "construye", "muestra", "busca", "explica",
                 "describe", "cambia", "protege", "apoya", "encuentra",
                 "conoce", "prepara", "abre", "organiza"],
        "obj": ["un puente nuevo", "el bosque antiguo", "muchos libros",
                "la historia de la región", "un camino largo", "el agua",
                "más tiempo", "los resultados", "nuevas ideas", "el jardín",
                "el medio ambiente", "el clima", "una casa pequeña",
                "el trabajo de la gente"],
        "tail": ["desde hace muchos años", "cada día", "en verano",
                 "cerca del lago", "con mucho cuidado", "sin problemas",
                 "todavía hoy", "después de la guerra", "para el futuro",
                 "los fines de semana", "en invierno", "en todo el mundo"],
        "conn": ["Además,", "Por eso", "Sin embargo,", "Hoy,",
                 "Antes,", "A veces,", "A menudo,"],
        "and": ["y", "pero", "porque"],
        "inverted": False,
    },
    "ru": {
        "subj": ["город", "учитель", "ребёнок", "правительство", "семья",
                 "компания", "врач", "школа", "музей", "наш клуб"],
        "verb": ["строит", "показывает", "ищет", "объясняет", "описывает",
                 "меняет", "защищает", "поддерживает", "знает", "открывает"],
        "obj": ["новый мост", "старый лес", "много книг", "историю региона",
                "воду", "больше времени", "результаты", "новые идеи",
                "маленький дом", "работу людей"],
        "tail": ["каждый день", "летом", "уже много лет", "зимой",
                 "с большим вниманием", "для будущего", "возле озера",
                 "без проблем"],
        "conn": ["Кроме того,", "Поэтому", "Сегодня", "Однако", "Раньше"],
        "and": ["и", "но", "потому что"],
        "inverted": False,
    },
}

_ZH = {
    "subj": ["这个城市", "老师", "孩子们", "政府", "我们的家庭", "这家公司",
             "医生", "学校", "博物馆", "研究人员", "农民", "朋友们"],
    "vo": ["建造了一座新桥", "保护古老的森林", "阅读很多书", "介绍这个地区的历史",
           "需要更多的时间", "发现了新的结果", "提出新的想法", "照顾花园",
           "关心环境", "研究天气的变化", "准备一顿晚饭", "打开新的学校"],
    "tail": ["每天", "在夏天", "多年来", "在湖边", "为了未来", "在冬天",
             "今天", "经常"],
    "conn": ["此外，", "所以", "但是", "后来", "现在"],
}

FOREIGN_LANGS = ("de", "fr", "es", "ru", "zh")


def _foreign_sentence(rng: random.Random, lang: str) -> str:
    d = _FOREIGN[lang]
    s, v, o, t = (rng.choice(d[k]) for k in ("subj", "verb", "obj", "tail"))
    form = rng.randint(0, 3)
    if form == 0:
        text = f"{s} {v} {o} {t}."
    elif form == 1:
        conn = rng.choice(d["conn"])
        text = f"{conn} {v} {s} {o} {t}." if d["inverted"] else f"{conn} {s} {v} {o} {t}."
    elif form == 2:
        s2, v2, o2 = (rng.choice(d[k]) for k in ("subj", "verb", "obj"))
        text = f"{s} {v} {o}, {rng.choice(d['and'])} {s2} {v2} {o2} {t}."
    else:
        text = f"{t} {v} {s} {o}." if d["inverted"] else f"{s} {t} {v} {o}."
    return text[0].upper() + text[1:]


def _zh_sentence(rng: random.Random) -> str:
    s, vo, t = rng.choice(_ZH["subj"]), rng.choice(_ZH["vo"]), rng.choice(_ZH["tail"])
    if rng.random() < 0.3:
        return f"{rng.choice(_ZH['conn'])}{s}{t}{vo}。"
    return f"{s}{t}{vo}，{rng.choice(_ZH['subj'])}{rng.choice(_ZH['vo'])}。"


def foreign_page(rng: random.Random, lang: str) -> str:
    """A few paragraphs (roughly 60-400 words) in one of FOREIGN_LANGS."""
    sentence = _zh_sentence if lang == "zh" else (lambda r: _foreign_sentence(r, lang))
    joiner = "" if lang == "zh" else " "
    paragraphs = [joiner.join(sentence(rng) for _ in range(rng.randint(3, 8)))
                  for _ in range(rng.randint(2, 6))]
    return "\n\n".join(paragraphs)


# --------------------------------------------------------------------------
# Junk pages.
# --------------------------------------------------------------------------

_MENU_ITEMS = [
    "Home", "About Us", "Services", "Products", "Blog", "Contact", "FAQ",
    "Careers", "Login", "Sign Up", "Shop", "Gallery", "Events", "News",
    "Support", "Privacy Policy", "Terms of Use", "Sitemap", "Search", "Menu",
    "Cart", "My Account", "Downloads", "Partners", "Press", "Team",
]

_KEYWORDS = [
    "shoes", "insurance", "loans", "hotels", "dentist", "plumber", "laptops",
    "flights", "car rental", "casino", "vpn", "mattress", "weight loss",
    "jewelry", "watches", "sneakers", "credit cards", "roofing", "locksmith",
    "phone cases", "supplements", "sunglasses", "web hosting", "movers",
]

_CITIES = ["New York", "London", "Chicago", "Dallas", "Miami", "Toronto",
           "Sydney", "Boston", "Denver", "Seattle", "Austin", "Phoenix"]

LOREM = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod "
    "tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam "
    "quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo "
    "consequat duis aute irure in reprehenderit voluptate velit esse cillum "
    "eu fugiat nulla pariatur excepteur sint occaecat cupidatat non proident "
    "sunt culpa qui officia deserunt mollit anim id est laborum"
).split()


def _nav_menu(rng):
    items = rng.sample(_MENU_ITEMS, rng.randint(8, 18))
    cats = [f"{rng.choice(ADJECTIVES).capitalize()} {plural(rng.choice(NOUNS)).capitalize()}"
            for _ in range(rng.randint(2, 6))]
    lines = [site_name(rng)] + items[:4] + cats + items[4:]
    return "\n".join(lines)


def _link_farm(rng):
    lines = []
    for _ in range(rng.randint(15, 40)):
        kw = rng.choice(_KEYWORDS)
        lines.append(rng.choice([
            f"Best {kw} {rng.choice(_CITIES)} - {make_url(rng)}",
            f"Click here for cheap {kw}: {make_url(rng)}",
            f"{kw.title()} deals {rng.randint(2019, 2024)} {make_url(rng)}",
        ]))
    return "\n".join(lines)


def _seo_keywords(rng):
    kws = rng.sample(_KEYWORDS, 3)
    lines = []
    for _ in range(rng.randint(1, 4)):
        parts = []
        for _ in range(rng.randint(12, 30)):
            kw, city = rng.choice(kws), rng.choice(_CITIES)
            parts.append(rng.choice([f"{kw} {city}", f"best {kw}", f"cheap {kw}",
                                     f"{kw} near me", f"buy {kw} online",
                                     f"{kw} {city} {rng.randint(2019, 2024)}",
                                     f"top {rng.randint(3, 20)} {kw}"]))
        lines.append(", ".join(parts))
    return "\n".join(lines)


def _lorem(rng):
    paragraphs = []
    for i in range(rng.randint(2, 5)):
        words = [rng.choice(LOREM) for _ in range(rng.randint(30, 90))]
        if i == 0:
            words[:5] = LOREM[:5]
        sentences, start = [], 0
        while start < len(words):
            end = start + rng.randint(6, 16)
            s = " ".join(words[start:end])
            sentences.append(s[0].upper() + s[1:] + ".")
            start = end
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def _very_short(rng):
    site, n = site_name(rng), rng.randint(100, 99999)
    return rng.choice([
        f"Page not found. Error {n}.",
        f"Loading {site}...",
        f"Please enable cookies to continue. Ref {n}.",
        f"Access denied ({n}).",
        f"Coming soon! {site} launches in {rng.randint(2, 12)} weeks.",
        f"This account has been suspended. Case {n}.",
        f"Thanks for subscribing to {site}!",
        f"{site} | Home",
    ])


def _repeated_line(rng):
    kw = rng.choice(_KEYWORDS)
    line = rng.choice([
        f"{kw} best price buy now {rng.randint(10, 99999)}",
        f"Visit {site_name(rng)} for {kw}",
        f"{kw.upper()} SALE {rng.randint(10, 90)}% OFF",
    ])
    return "\n".join([line] * rng.randint(20, 80))


def _number_table(rng):
    cols = rng.sample(["ID", "Value", "Count", "Rate", "Min", "Max", "Year",
                       "Total", "Score", "Index"], rng.randint(3, 6))
    rows = [" | ".join(cols)]
    for _ in range(rng.randint(15, 50)):
        rows.append(" | ".join(str(rng.randint(0, 99999)) if rng.random() < 0.7
                               else f"{rng.uniform(0, 100):.2f}" for _ in cols))
    return "\n".join(rows)


def _code_snippet(rng):
    def ident():
        return rng.choice(VERBS) + rng.choice(NOUNS).capitalize()
    lines = []
    for _ in range(rng.randint(2, 6)):
        fn, el, var = ident(), rng.choice(NOUNS), rng.choice(NOUNS)
        lines += [
            f"function {fn}({var}) {{",
            f"  var el = document.getElementById('{el}-{rng.randint(1, 999)}');",
            "  if (!el) { return null; }",
            f"  el.style.{rng.choice(['width', 'height', 'top', 'left'])} = {var} * {rng.randint(2, 64)} + 'px';",
            f"  window.setTimeout(function() {{ {ident()}(el); }}, {rng.randint(10, 5000)});",
            "}",
        ]
    lines.append(f"document.addEventListener('DOMContentLoaded', {ident()});")
    return "\n".join(lines)


def _caps_spam(rng):
    lines = []
    for _ in range(rng.randint(5, 20)):
        kw = rng.choice(_KEYWORDS).upper()
        lines.append(rng.choice([
            f"!!! BUY {kw} NOW !!! LIMITED TIME OFFER",
            f"CALL 1-800-{rng.randint(100, 999)}-{rng.randint(1000, 9999)} FOR FREE {kw}",
            f"{rng.randint(50, 90)}% OFF ALL {kw} TODAY ONLY",
            f"CLICK HERE TO WIN {kw} WORTH ${rng.randint(100, 9999)}",
            f"BEST {kw} IN {rng.choice(_CITIES).upper()} GUARANTEED",
        ]))
    return "\n".join(lines)


_JUNK = {
    "nav_menu": _nav_menu,
    "link_farm": _link_farm,
    "seo_keywords": _seo_keywords,
    "lorem_ipsum": _lorem,
    "very_short": _very_short,
    "repeated_line": _repeated_line,
    "number_table": _number_table,
    "code": _code_snippet,
    "caps_spam": _caps_spam,
}

JUNK_KINDS = tuple(_JUNK)

# Language a truth file records for each junk kind: lorem ipsum is
# pseudo-Latin, number tables have no language (ISO 639-2 "zxx").
JUNK_LANGUAGE = dict.fromkeys(JUNK_KINDS, "en") | {
    "lorem_ipsum": "la", "number_table": "zxx"}


def junk_page(rng: random.Random, kind: str | None = None) -> tuple[str, str]:
    """A junk page and its kind (one of JUNK_KINDS)."""
    kind = kind or rng.choice(JUNK_KINDS)
    return _JUNK[kind](rng), kind


# --------------------------------------------------------------------------
# Boilerplate: lines an extractor may or may not keep around the main text.
# --------------------------------------------------------------------------

def cookie_banner(rng: random.Random) -> str:
    site = site_name(rng)
    return rng.choice([
        f"We use cookies to improve your experience on {site}. Accept | Decline",
        "This website uses cookies. By continuing to browse you agree to our use of cookies.",
        f"{site} uses cookies for analytics. Manage preferences",
    ])


def nav_header(rng: random.Random) -> str:
    items = rng.sample(_MENU_ITEMS[:16], rng.randint(3, 5))
    return " | ".join(items)


def footer(rng: random.Random) -> str:
    return f"© {rng.randint(2019, 2024)} {site_name(rng)}. All rights reserved."


def share_line(rng: random.Random) -> str:
    nets = rng.sample(["Facebook", "Twitter", "LinkedIn", "Pinterest", "Reddit"],
                      rng.randint(2, 3))
    return " | ".join(f"Share on {n}" for n in nets)


def byline(rng: random.Random) -> str:
    return f"Posted by {person(rng)} on {rng.randint(1, 28)} March {rng.randint(2015, 2024)}"


HEADER_LINES = (nav_header, cookie_banner, byline)
FOOTER_LINES = (footer, share_line)


# --------------------------------------------------------------------------
# Variant transforms: one base page as a different extractor might return it.
# ``strength`` in (0, 1] scales how much is changed.
# --------------------------------------------------------------------------

def add_boilerplate(rng: random.Random, text: str, strength: float = 1.0) -> str:
    """Wrap text in header/footer lines (up to 2 each at full strength)."""
    n = max(1, round(2 * strength))
    top = [rng.choice(HEADER_LINES)(rng) for _ in range(rng.randint(0, n))]
    bottom = [rng.choice(FOOTER_LINES)(rng) for _ in range(rng.randint(1, n))]
    return "\n".join(top + [text] + bottom)


def change_linebreaks(rng: random.Random, text: str, strength: float = 1.0) -> str:
    """Flip some paragraph separators and re-wrap one paragraph into lines."""
    parts = re.split(r"(\n+)", text)  # text, sep, text, sep, ...
    seps = list(range(1, len(parts), 2))
    for i in rng.sample(seps, max(1, round(len(seps) * 0.5 * strength))):
        parts[i] = "\n" if parts[i] == "\n\n" else "\n\n"
    paras = list(range(2, len(parts), 2)) or [0]
    if rng.random() < strength:
        i = rng.choice(paras)
        parts[i] = wrap(parts[i], rng.randint(90, 140))
    return "".join(parts)


def wrap(paragraph: str, width: int) -> str:
    """Greedy word wrap with '\\n', as some extractors keep source lines."""
    lines, cur = [], ""
    for word in paragraph.split(" "):
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    lines.append(cur)
    return "\n".join(lines)


def truncate(rng: random.Random, text: str, keep: float) -> str:
    """The first ``keep`` fraction of text, cut at a space (a page cut short)."""
    cut = int(len(text) * keep)
    space = text.rfind(" ", 0, cut)
    return text[: space if space > 0 else cut].rstrip()


def edit_words(rng: random.Random, text: str, strength: float = 1.0) -> str:
    """Substitute or delete a few words (2-6 at full strength)."""
    tokens = re.split(r"( +)", text)
    words = [i for i in range(0, len(tokens), 2) if tokens[i].isalpha()]
    for i in rng.sample(words, min(len(words), max(1, round(rng.randint(2, 6) * strength)))):
        tokens[i] = rng.choice(NOUNS + ADJECTIVES) if rng.random() < 0.6 else ""
    return re.sub(r"  +", " ", "".join(tokens))


def char_ngrams(text: str, n: int = 25) -> set[str]:
    """Set of character n-grams (the whole text if shorter than n)."""
    return {text[i:i + n] for i in range(max(len(text) - n + 1, 1))}


def jaccard_char25(a: str, b: str) -> float:
    """Jaccard similarity of the character 25-gram sets of two raw texts."""
    sa, sb = char_ngrams(a), char_ngrams(b)
    return len(sa & sb) / len(sa | sb)
