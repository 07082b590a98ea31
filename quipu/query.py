"""From a prompt to query terms: what the person is asking about, if anything.

On the prompt path: standard library only. Contract:
- ``extract_terms`` returns the content terms of a text in order of appearance, each once,
  lower-cased, with a flag for strong signals (file paths, error and exception names,
  identifiers from stack traces, URL hosts and path words). Stop words, conversational filler
  ("ok", "go ahead", "thanks, continue") and generic request verbs are not content terms, so a
  prompt made only of them has no topic and recall stays silent.
- Screenshot and paste placeholders (``[Image #1]``, ``[Pasted text #2 +40 lines]``) carry no
  topic and are dropped; code blocks contribute their identifiers.
- ``fts_quote`` makes any term safe inside an FTS5 ``MATCH`` expression.
"""
from __future__ import annotations

import re
from typing import NamedTuple


class Term(NamedTuple):
    text: str
    strong: bool


# Words that never carry a topic: English function words, conversational filler, and the
# generic verbs of requests to a coding agent ("fix", "check", "run" say what to do, not about what).
STOPWORDS = frozenset(
    """
a about above actually after again against ah ahead all alright also am an and any anything anyway are aren't
around as ask at aw awesome away back be because been before being below between both but by can can't cannot
cheers cool could couldn't did didn't do does doesn't doing don't done down during each either else enough etc
even ever every everything exactly fantastic few fine first for from further get gets getting go goes going gone
good got gotcha great had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself hey
hi him himself his hmm how how's however i i'd i'll i'm i've if in into is isn't it it's its itself just k kinda
last later let let's lets like look looks lol lot lots make makes may maybe me meanwhile might mine more most much
must mustn't my myself need needs nevermind nice no nope nor not nothing now of off ok okay on once one only or
other ought our ours ourselves out over own perfect please pls plz pretty proceed quite rather really right same
say says see seems shall shan't she she'd she'll she's should shouldn't simply so some something sometimes soon
sorry still such sure take tell than thank thanks thanx thx that that's the their theirs them themselves then there
there's these they they'd they'll they're they've thing things think this those though through thus to too try
trying u um uh under until up upon us use used using very via wait want wanted was wasn't way we we'd we'll we're
we've well were weren't what what's whatever when when's where where's whether which while who who's whom whose
why why's will with within without won't would wouldn't wow yay yeah yep yes yet you you'd you'll you're you've
your yours yourself yourselves
continue continuing keep going go-ahead next now again also then ok okay alright done
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
""".split()
)

_PLACEHOLDER = re.compile(
    r"\[(?:image|pasted text|pasted image|screenshot|file)[^\]]{0,40}\]|screenshot[\w .:-]{0,40}\.(?:png|jpe?g|gif|webp)",
    re.IGNORECASE,
)
_URL = re.compile(r"\b(?:https?|ftp|file|ssh|git)://[^\s<>\"'`)\]]+", re.IGNORECASE)
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|\b[\w.@+-]+(?:/[\w.@+-]+)+\.\w{1,8}\b|\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cpp|hpp|cs|php|sh|md|toml|ya?ml|json|sql|lock|cfg|ini|env|txt|html|css|scss)\b")
_ERROR_NAME = re.compile(r"\b(?:[A-Z][a-z0-9]+){1,6}(?:Error|Exception|Warning|Fault|Failure|Timeout|Exit)\b|\bE[A-Z]{3,}\b|\b[A-Z][A-Z0-9_]{3,}\b")
_CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_CODE_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_URL_NOISE = frozenset("www com org net io dev app html htm php aspx index https http".split())
# Folder and extension words that every path has; the distinctive part is the rest.
_PATH_NOISE = frozenset(
    """src lib lib64 usr home bin sbin tmp var etc opt dist build out node_modules site packages site-packages
    venv env users user root mnt py js ts tsx jsx go rs rb java kt c h cpp hpp cs php sh md toml yaml yml json
    sql lock cfg ini txt html css scss""".split()
)
_MAX_TERMS = 64


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _is_content(word: str) -> bool:
    if word in STOPWORDS or len(word) < 2:
        return False
    if word.isdigit():
        return len(word) >= 3  # ports, status codes, issue numbers
    return True


def extract_terms(text: str) -> list[Term]:
    """Content terms of ``text`` in order, each once; strong signals flagged."""
    if not text:
        return []
    text = _PLACEHOLDER.sub(" ", text)
    strong: dict[str, None] = {}
    for url in _URL.findall(text):
        rest = url.split("://", 1)[1]
        host, _, path = rest.partition("/")
        path = path.split("?", 1)[0].split("#", 1)[0]
        for word in _words(host.split("@")[-1].split(":")[0]) + _words(path):
            if _is_content(word) and word not in _URL_NOISE and not (word.isalnum() and len(word) > 24):
                strong.setdefault(word)
    text = _URL.sub(" ", text)
    for path in _PATH.findall(text):
        parts = [p for p in re.split(r"[/\\]", path) if p and p not in (".", "..", "~")]
        for part in parts[-3:]:
            for word in _words(part):
                if _is_content(word) and word not in _URL_NOISE and word not in _PATH_NOISE:
                    strong.setdefault(word)
    text = _PATH.sub(" ", text)
    for name in _ERROR_NAME.findall(text) + _CAMEL.findall(text):
        low = name.lower()
        if _is_content(low):
            strong.setdefault(low)
    code_free = _CODE_FENCE.sub(" ", text)
    ordered: dict[str, bool] = {}
    for word in _words(code_free):
        if _is_content(word):
            ordered.setdefault(word, word in strong)
    for word in strong:
        ordered.setdefault(word, True)
    for block in _CODE_FENCE.findall(text):
        for word in _words(block):
            if _is_content(word) and len(word) > 2:
                ordered.setdefault(word, False)
    terms = [Term(w, s) for w, s in ordered.items()]
    return terms[:_MAX_TERMS]


def has_topic(text: str) -> bool:
    return bool(extract_terms(text))


def fts_quote(term: str) -> str:
    """Quote one term for FTS5 MATCH: a string literal with inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'
