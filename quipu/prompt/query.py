"""From a prompt to query terms: what the person is asking about, if anything.

On the prompt path: standard library only. Contract:
- ``extract_terms`` returns the content terms of a text in order of appearance, each once,
  lower-cased, with a flag for strong signals (file paths, error and exception names,
  identifiers from stack traces, URL hosts and path words). Stop words, conversational filler
  ("ok", "go ahead", "thanks, continue") and generic request verbs are not content terms, so a
  prompt made only of them has no topic and recall stays silent.
- Screenshot and paste placeholders (``[Image #1]``, ``[Pasted text #2 +40 lines]``) carry no
  topic and are dropped; code blocks contribute their identifiers.
- ``fts_quote`` makes any term safe inside an FTS5 ``MATCH`` expression; ``fts_any`` quotes a term
  with its other forms (``ABBREVIATIONS``: "prod" and "production", "k8s" and "kubernetes" are
  one term), so a prompt's short form finds a memory's long one and the other way round.
- A term with other forms is generic exactly when its long form is (``is_generic``), whichever
  form the prompt uses.
- ``fts_term(word)`` is the term the FTS5 index stores for the first token of ``word`` (unicode61
  splits on anything but letters and digits and folds case; porter stems tokens of 3 to 64
  bytes), ``""`` when the word has no token, and ``None`` when that token is not plain ASCII (the
  caller then asks SQLite).
"""

from quipu.prompt.vocabulary import is_listed


class Term(tuple):  # type: ignore[type-arg]
    """(text, strong, generic): a lower-cased term, whether it is a strong signal (a path, an
    error name, a URL part), and whether it is a generic word that cannot make a topic alone.

    A plain tuple subclass: ``typing.NamedTuple`` would import ``typing`` on the prompt path."""

    __slots__ = ()

    def __new__(cls, text: str, strong: bool, generic: bool = False) -> "Term":
        return tuple.__new__(cls, (text, strong, generic))

    @property
    def generic(self) -> bool:
        return self[2]  # type: ignore[no-any-return]

    @property
    def text(self) -> str:
        return self[0]  # type: ignore[no-any-return]

    @property
    def strong(self) -> bool:
        return self[1]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Term({self[0]!r}, strong={self[1]}, generic={self[2]})"


# Words that never carry a topic: English function words, conversational filler, and the
# generic verbs of requests to a coding agent ("fix", "check", "run" say what to do, not about what).
STOPWORDS = frozenset(
    """
a about above actually after again against ah ahead all alright also am an and any anything anyway are aren't
around as ask at aw awesome   be because been before being below between both but by can can't cannot
cheers cool could couldn't did didn't do does doesn't doing don't  down during each either else enough etc
even ever every everything exactly fantastic few fine for from further       
good  gotcha great had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself hey
hi him himself his hmm how how's however i i'd i'll i'm i've if in into is isn't it it's its itself just k kinda
 let let's lets    lol     may maybe me meanwhile might mine more most much
must mustn't my myself   nevermind nice no nope nor not nothing now of off ok okay on once  only or
other ought our ours ourselves out over own perfect please pls plz pretty proceed quite rather really right same
    shall shan't she she'd she'll she's should shouldn't simply so some something sometimes soon
sorry still such sure   than thank thanks thanx thx that that's the their theirs them themselves then there
there's these they they'd they'll they're they've    this those though through thus to too 
 u um uh under until up upon us    very via wait   was wasn't way we we'd we'll we're
we've well were weren't what what's whatever when when's where where's whether which while who who's whom whose
why why's will with within without won't would wouldn't wow yay yeah yep yes yet you you'd you'll you're you've
your yours yourself yourselves
continue continuing   go-ahead next now again also then ok okay alright 
""".split()
)

# Words that  what to do or point  at the conversation ("fix", "run", "the second option",
# "same error"), and the words of asking ("remind me", "tell me", "I forgot"), but name no subject. A prompt made only of these and stop words has no topic of
# its own; in a prompt that has  they are ordinary terms (the rarest-terms rule keeps the
# common ones from carrying the score).
GENERIC = frozenset(
    """
one away back keep later done
type types mention mentions mentioned recently activity activities favorite favourite based suggest suggested
year years ago long reason reasons way ways example examples regarding according related specific particular
describe described main
get gets getting go goes going gone got look looks make makes need needs say says see seems take tell think
try trying use used using want wanted like lot lots
fix fixed check checked run running ran do doing help make made add added change changed update updated create
created show find found give gave put start started stop stopped work works working worked know knew mean meant
happen happened happening seem seemed try tried looking look looked sounds sound go went write wrote read
remove removed delete deleted implement implemented agree agreed approve approved ship lgtm sgtm ty np
left right carry step steps error errors issue issues problem problems bug bugs weird strange odd explain
elaborate bit undo revert reverted first second third last option options approach approaches hold never mind
leave sense double idea ideas catch stuff part parts point case version suggestion suggestions question questions
answer instead else whole rest kind sort everything anything something nothing thing things one ones two three
again currently previous above below earlier later today yesterday tomorrow minute minutes moment sec second
good bad better worse best worst new old same different other others another
traceback recent call calls line lines file files screenshot screenshots image images attached attachment
pasted paste picture photo pic see above below
remind reminds reminded reminding remember remembers remembered recall recalled forget forgot forgotten
wonder wondering wondered curious recap tell telling told mind quick quickly real
""".split()
)

# Abbreviations and their long forms: one line a term, every form on it the same term; the longest
# form gives the term its genericness and its stem.
# Only single words developers write both ways in prose. Left out: an ambiguous short form ("pr",
# "req", "doc": a doc is any file), and the short forms that mostly live in identifiers ("ctx",
# "err", "msg", "args", "params", "fn", "tmp", "utils", "pkg"): "ctx_out" or "pkg_resources" is a
# specific name, and joining it to an everyday long form would only make it common. The index stems both sides (Porter), so
# one inflection of each form is enough: "configs" and "configurations" stem as these do.
ABBREVIATIONS = """
prod prd production
k8s kube kubernetes
db dbs database databases
repo repos repository repositories
config configs configuration configurations
auth authn authentication
authz authorization
env envs environment environments
deps dep dependencies dependency
perf performance
docs documentation
impl implementation
dev development
infra infrastructure
lib libs library libraries
dir dirs directory directories
app apps application applications
spec specs specification specifications
ts typescript
js javascript
tf terraform
pg postgres postgresql
mongo mongodb
gh github
cert certs certificate certificates
creds cred credentials credential
async asynchronous
mgmt management
i18n internationalization
l10n localization
a11y accessibility
o11y observability
ws websocket websockets
wasm webassembly
stg staging
perms permissions permission
admin administrator
"""
_FORMS: "dict[str, tuple[str, ...]]" = {}
_LONG: "dict[str, str]" = {}


def _load_forms() -> None:
    for line in ABBREVIATIONS.splitlines():
        forms = tuple(line.split())
        if not forms:
            continue
        long = max(forms, key=len)
        for form in forms:
            _FORMS[form] = forms
            _LONG[form] = long


def forms_of(word: str) -> "tuple[str, ...]":
    """Every form of ``word`` (lower-cased) that is the same term, ``(word,)`` when it has none."""
    if not _FORMS:
        _load_forms()
    return _FORMS.get(word, (word,))


def long_form(word: str) -> str:
    """The form whose genericness and stem ``word`` takes: its long form, or itself."""
    if not _LONG:
        _load_forms()
    return _LONG.get(word, word)


_PLACEHOLDER_HEADS = ("image", "pasted", "screenshot", "file", "picture", "attachment")
_IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic")
_ERROR_SUFFIXES = ("error", "exception", "warning", "fault", "failure", "timeout", "exit")
_URL_NOISE = frozenset("www com org net io dev app html htm php aspx index https http".split())
# Folder and extension words that every path has; the distinctive part is the rest.
_PATH_NOISE = frozenset(
    """src lib lib64 usr home bin sbin tmp var etc opt dist build out node_modules site packages
    venv env users user root mnt py js ts tsx jsx go rs rb java kt c h cpp hpp cs php sh md toml yaml yml json
    sql lock cfg ini txt html css scss""".split()
)
FILE_EXTS = frozenset(
    "py js ts tsx jsx go rs rb java kt c h cpp hpp cs php sh md toml yaml yml json sql lock cfg ini env txt html css scss".split()
)
_EDGE = "()[]{}<>\"'`,;:!?*"
_CONTRACTIONS = ("n't", "'re", "'ll", "'ve", "'d", "'m", "'s")
_MAX_TERMS = 64
_WORD_EDGES = ".,;:!?()[]{}<>\"'`*"


def _words(text: str) -> list[str]:
    """Lower-cased alphanumeric runs, split the way SQLite's unicode61 tokenizer splits text.

    An apostrophe inside a word keeps contractions whole ("don't" stays a stop word) and drops a
    possessive ("john's" is "john")."""
    core = text.strip(_WORD_EDGES)
    if core.isalnum():  # most chunks are one plain word: no need to look at each character
        return [core.lower()]
    out: list[str] = []
    word: list[str] = []
    text = text.replace("\u2019", "'")
    n = len(text)
    for i, ch in enumerate(text):
        if ch.isalnum():
            word.append(ch)
        elif ch == "'" and word and i + 1 < n and text[i + 1].isalnum():
            word.append(ch)
        elif word:
            out.append("".join(word).lower())
            word = []
    if word:
        out.append("".join(word).lower())
    cleaned = []
    for w in out:
        if "'" in w:
            if w.endswith("'s"):
                w = w[:-2]
            elif not w.endswith(_CONTRACTIONS):
                w = w.replace("'", "")
        if w:
            cleaned.append(w)
    return cleaned


def _is_content(word: str) -> bool:
    if word in STOPWORDS or len(word) < 2 or "'" in word:
        return False
    return True


def _cut_blocks(text: str, opener: str, closer: str, keep: list[str] | None = None) -> str:
    """Remove ``opener ... closer`` spans (a missing closer runs to the end); kept spans go to ``keep``."""
    out = []
    pos = 0
    while True:
        start = text.find(opener, pos)
        if start < 0:
            out.append(text[pos:])
            return "".join(out)
        stop = text.find(closer, start + len(opener))
        stop = len(text) if stop < 0 else stop + len(closer)
        out.append(text[pos:start])
        out.append(" ")
        if keep is not None:
            keep.append(text[start:stop])
        pos = stop


def _drop_placeholders(text: str) -> str:
    """Remove ``[Image #1]``, ``[Pasted text #2 +40 lines]`` and screenshot file names."""
    out = []
    pos = 0
    low = text.lower()
    while True:
        start = low.find("[", pos)
        if start < 0:
            out.append(text[pos:])
            break
        stop = low.find("]", start)
        inner = low[start + 1 : stop] if stop > 0 else ""
        if stop > 0 and stop - start < 60 and inner.lstrip().startswith(_PLACEHOLDER_HEADS):
            out.append(text[pos:start] + " ")
            pos = stop + 1
        else:
            out.append(text[pos : start + 1])
            pos = start + 1
    return " ".join(
        chunk for chunk in "".join(out).split(" ") if not chunk.lower().rstrip(_EDGE + ".").endswith(_IMAGE_EXTS)
    )


def _is_error_name(token: str) -> bool:
    """TypeError, ModuleNotFoundError, ECONNREFUSED, camelCase and PascalCase identifiers."""
    if len(token) < 4 or not token.isalnum() or not token[0].isalpha():
        return False
    if token.isupper() and token.isalpha():
        return True
    inner_caps = any(c.isupper() for c in token[1:])
    if inner_caps and token.lower().endswith(_ERROR_SUFFIXES):
        return True
    return inner_caps and any(c.islower() for c in token)


def _url_words(chunk: str) -> list[str]:
    rest = chunk.split("://", 1)[1]
    host, _, path = rest.partition("/")
    path = path.split("?", 1)[0].split("#", 1)[0]
    host = host.split("@")[-1].split(":")[0]
    words = _words(host) + _words(path)
    return [w for w in words if _is_content(w) and w not in _URL_NOISE and not (len(w) > 24 and w.isalnum())]


def _is_path(chunk: str) -> bool:
    if "/" in chunk or "\\" in chunk:
        parts = [p for p in chunk.replace("\\", "/").split("/") if p]
        return len(parts) >= 2 or chunk.startswith(("~/", "./", "../", "/"))
    stem, dot, ext = chunk.rpartition(".")
    return bool(dot and stem and ext.lower() in FILE_EXTS and not stem.endswith("."))


def _path_words(chunk: str) -> list[str]:
    parts = [p for p in chunk.replace("\\", "/").split("/") if p and p not in (".", "..", "~")]
    out: list[str] = []
    for part in parts[-3:]:
        out.extend(w for w in _words(part) if _is_content(w) and w not in _PATH_NOISE and w not in _URL_NOISE)
    return out


def extract_terms(text: str) -> "list[Term]":
    """Content terms of ``text`` in order, each once; strong signals flagged."""
    if not text:
        return []
    code: list[str] = []
    text = _cut_blocks(_drop_placeholders(text), "```", "```", code)
    ordered: dict[str, bool] = {}

    def add(word: str, strong: bool) -> None:
        if word not in ordered:
            ordered[word] = strong
        elif strong:
            ordered[word] = True

    names: set[str] = set()
    sentence_start = True
    for raw in text.split():
        chunk = raw.strip(_EDGE).rstrip(".")
        starts = sentence_start
        sentence_start = raw.endswith((".", "!", "?", ":"))
        if not chunk:
            continue
        if not starts and 2 <= len(chunk) <= 3 and chunk.isalpha() and chunk[0].isupper() and chunk[1:].islower():
            names.add(chunk.lower())  # "Jon", "Tim" in mid-sentence: a name, not a short token
        if "://" in chunk:
            for word in _url_words(chunk):
                add(word, True)
            continue
        if _is_path(chunk):
            for word in _path_words(chunk):
                add(word, True)
            continue
        for token in chunk.replace(".", " ").replace("-", " ").replace("_", " ").split():
            token = token.strip(_EDGE)
            if _is_error_name(token) and token.lower() not in STOPWORDS:
                add(token.lower(), True)
                continue
            for word in _words(token):
                if _is_content(word):
                    add(word, False)
    for block in code:
        for word in _words(block):
            if _is_content(word) and len(word) > 2:
                add(word, False)
    return [Term(w, s, is_generic(w) and w not in names) for w, s in ordered.items()][:_MAX_TERMS]


def is_generic(word: str) -> bool:
    """Whether ``word`` (lower-cased) names no subject on its own: the generic request words
    above, the everyday vocabulary of working on code, stop words and conversational words of
    other languages, general English words (``quipu.prompt.vocabulary``), any number (a line number, a
    count, a port: it sharpens but is never the topic), a number with a unit or a short code
    ("25ms", "mp4") and any token of three characters or fewer ("vs", "ci", "ça"), even in a path
    or an identifier. An abbreviation is generic when its long form is ("prod": "production"; "k8s"
    names a subject as "kubernetes" does)."""
    word = long_form(word)
    if word.isdigit() or len(word) <= 3:
        return True
    if sum(c.isalpha() for c in word) <= 3 and any(c.isdigit() for c in word):
        return True  # a number with a unit or a short code: 25ms, 1280px, mp4, k8s
    return word in GENERIC or is_listed(word)


def phrase_words(text: str) -> "list[str]":
    """The words of ``text`` in order, lower-cased, split the way the index splits them (every
    word, stop words included: a phrase is matched word for word)."""
    return [w for chunk in text.split() for w in _words(chunk)]


def is_stopword(word: str) -> bool:
    return word in STOPWORDS


def has_topic(text: str) -> bool:
    """True when the text names a subject: at least one content term that is not generic."""
    return any(not t.generic for t in extract_terms(text))


def fts_quote(term: str) -> str:
    """Quote one term for FTS5 MATCH: a string literal with inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def fts_any(term: str) -> str:
    """``term`` for FTS5 MATCH with its other forms: ``("prod" OR "production")``."""
    forms = forms_of(term)
    if len(forms) == 1:
        return fts_quote(term)
    return "(" + " OR ".join(fts_quote(f) for f in forms) + ")"


_TREE = frozenset("├└│┌┐┘┬┴┼─╰╭")
_PASTE_CHARS = 200  # less pasted text than this is read as part of the person's words
_PASTE_LINES = 3


def _pasted_line(line: str) -> bool:
    """A line that reads as output, a log, a listing or code rather than a person's sentence:
    indented, drawn as a tree, led by a path, or mostly tokens that are not plain words."""
    if line[:2].isspace() or not _TREE.isdisjoint(line):
        return True
    chunks = line.split()
    if chunks[0].startswith(("/", "~/", "./", "../", "\\", "$", ">>>")) or chunks[0][1:3] == ":\\":
        return True
    plain = sum(1 for c in chunks if c.strip(_EDGE + ".").replace("'", "").replace("-", "").isalpha())
    return plain < 0.6 * len(chunks)


def split_pasted(text: str) -> "tuple[str, str]":
    """``(own, pasted)``: the person's words and what they pasted (fenced blocks, and the span
    of lines from the first to the last line that reads as output; a short line amid output is
    output too, as a log's own sentences are). ``("", "")`` when little was pasted or nothing
    is left of the person's words."""
    pasted: list[str] = []
    rest = _cut_blocks(text, "```", "```", pasted)
    lines = rest.splitlines()
    marks = [_pasted_line(line) if line.strip() else None for line in lines]
    found = [i for i, m in enumerate(marks) if m]
    own = lines
    if found:
        first, last = found[0], found[-1]
        kept = [i for i in range(first, last + 1)
                if marks[i] is False and (len(lines[i].split()) >= 12 or lines[i].rstrip().endswith("?"))]
        own = lines[:first] + [lines[i] for i in kept] + lines[last + 1:]
        pasted += [lines[i] for i in range(first, last + 1) if i not in kept]
    size = sum(len(p) for p in pasted)
    if size < _PASTE_CHARS or sum(p.count("\n") + 1 for p in pasted) < _PASTE_LINES:
        return "", ""
    own_text = "\n".join(own).strip()
    return (own_text, "\n".join(pasted)) if own_text else ("", "")
