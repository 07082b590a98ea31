"""The capture gates: what a candidate memory must be before capture may commit it.

The gates are code. The capture prompt asks the model for the same things, but nothing the
model says is trusted on its own: a candidate is committed only when every gate below passes.

Contract:
- ``Candidate.create(item)`` is the parse boundary for one candidate of the model's answer
  (the JSON shape ``CANDIDATE_SCHEMA`` in ``quipu.capture.capture``); it never raises for odd values, it
  normalises them.
- ``check(candidate)`` returns ``None`` (admit) or the first ``Refusal(gate, detail)`` in the
  order of ``GATES``: secret, prompt-injection, malformed, outcome, kind, class, imperative,
  question, transient-error, environment-dependent, negative-tool-claim, one-off-story.
- ``check_text(text)`` runs the gates that apply to any text quipu writes on someone's behalf
  (secret, prompt-injection, imperative); ``fact set`` uses it.
- The prompt-injection gate refuses text that addresses the agent (role markers, "ignore previous
  instructions", "you must"...), text that addresses the assistant reading the memory ("assistants
  reading this memory..."), and text that asks it to keep something from the user, named or not
  ("must not mention ... to the user" / "to them" / "to the developer" / "to whoever asks", "don't
  tell him", "keep this from the user", "keep it quiet", "don't bring up ...", "avoid telling",
  "never reveal this").
- ``check_card(text)`` is what a line of the always-on card, and an always-on rule as sessions
  read it (``quipu.claude.always_on``), must pass: ``check_text``'s gates, then ``safeguard``:
  nothing that weakens a safeguard (``safeguard_hit``). ``SAFEGUARD`` names it: permission-skipping
  flags and auto-approval ("yolo", "--yes to everything", "accept all edits"), a download piped to
  a shell or an interpreter, verification turned off by a flag, a variable or a config key
  (``curl -k``, ``NODE_TLS_REJECT_UNAUTHORIZED=0``, ``http.sslVerify false``, ``verify=False``...),
  and verification, hooks, checks, tests, linters, the sandbox, permissions or confirmations
  disabled, turned off, skipped, bypassed or ignored, in any inflection. A phrase that is
  forbidden where it stands ("never run with --yolo", "the user does not use curl -k") passes;
  "don't forget to", "never ... without", "do not ask before" do not. The skill drafts' gate,
  ``quipu.skills.gate``, uses the same function.

Limits of the text heuristics (they are a safety net behind the model's own ``kind`` and
``outcome`` fields, not a classifier): they read English only; they refuse some durable notes
that mention a status code or a timeout without a condition ("the API returns 503") and must
then be written by hand with ``quipu add``; an imperative hidden in a subordinate clause
("the rule is: run X") passes the imperative gate (the prompt-injection gate still refuses
"you must" and role markers); the concealment and safeguard phrases are English and literal, so
a paraphrase ("let the model act without asking", "trust every certificate") passes, and a list
of forbidden things after one "never" is read clause by clause (a comma ends the negation's reach).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from quipu.prompt import fence
from quipu.store import secrets_scan

CAPTURE_CLASSES = ("rule", "preference", "fact", "reference", "project-note")
OUTCOMES = ("held", "refuted", "unknown")
KINDS = ("durable", "transient-error", "environment-failure", "tool-complaint", "one-off-story", "hypothesis")
PROFILE_PREFIXES = ("Identity", "Preference", "Environment", "Working style")
MAX_TITLE = 120
MAX_STATEMENT = 1500


class Refusal(NamedTuple):
    gate: str
    detail: str


def _text(value: object, limit: int = 4000) -> str:
    return value.strip()[:limit] if isinstance(value, str) else ""


def _texts(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(v.strip()[:80] for v in value if isinstance(v, str) and v.strip() and "\n" not in v))


@dataclass(frozen=True)
class Candidate:
    cls: str
    title: str
    statement: str
    description: str = ""
    outcome: str = "unknown"
    kind: str = "durable"
    subject: str = ""
    value: str = ""
    topics: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    said_by: str = "assistant"
    quote: str = ""
    scope: str = "user"
    profile_prefix: str = ""
    stable_for_months: int = 0

    @classmethod
    def create(cls, item: Any) -> Candidate:
        item = item if isinstance(item, dict) else {}
        months = item.get("stable_for_months")
        prefix = _text(item.get("profile_prefix"))
        return cls(
            cls=_text(item.get("class")),
            title=" ".join(_text(item.get("title")).split()),
            statement=_text(item.get("statement")),
            description=" ".join(_text(item.get("description")).split())[:300],
            outcome=_text(item.get("outcome")) or "unknown",
            kind=_text(item.get("kind")) or "durable",
            subject=" ".join(_text(item.get("subject")).split())[:120],
            value=" ".join(_text(item.get("value")).split())[:300],
            topics=_texts(item.get("topics")),
            entities=_texts(item.get("entities")),
            aliases=_texts(item.get("aliases")),
            said_by=_text(item.get("said_by")) or "assistant",
            quote=_text(item.get("quote")),
            scope=_text(item.get("scope")) or "user",
            profile_prefix=prefix if prefix in PROFILE_PREFIXES else "",
            stable_for_months=months if isinstance(months, int) and not isinstance(months, bool) else 0,
        )

    def claim_text(self) -> str:
        """The words that would be committed as the memory's claim."""
        parts = [self.title, self.description, self.statement]
        if self.cls == "fact":
            parts += [self.subject, self.value]
        return "\n".join(p for p in parts if p)

    def all_text(self) -> str:
        """Every string of the candidate, for the secret and injection gates."""
        return "\n".join([self.title, self.description, self.statement, self.subject, self.value, self.quote,
                          *self.topics, *self.entities, *self.aliases])

    def excerpt(self, limit: int = 160) -> str:
        """A short, redacted excerpt for logs: never the secret itself."""
        text = " ".join(secrets_scan.redact(self.title or self.statement).split())
        return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------------- patterns

_NOT = (r"(do\s+not|don'?t|must\s+not|mustn'?t|should\s+not|shouldn'?t|never|not\s+to|cannot|can'?t|may\s+not"
        r"|avoid|refrain\s+from)")
_TELL = r"(tell|inform|warn|mention|reveal|disclose|divulge|show|say|admit|acknowledge|notify|alert|bring\s+up)"
_TELLS = (r"(tell(s|ing)?|told|inform(s|ed|ing)?|warn(s|ed|ing)?|mention(s|ed|ing)?|reveal(s|ed|ing)?|disclos(e|es|ed|ing)"
          r"|divulg(e|es|ed|ing)|show(s|n|ed|ing)?|say(s|ing)?|said|admit(s|ted|ting)?|acknowledg(e|es|ed|ing)"
          r"|notif(y|ies|ied|ying)|alert(s|ed|ing)?|bring(s|ing)?\s+up|brought\s+up|let(s|ting)?\s+on)")
# Who is kept in the dark: the user by any name, or a pronoun for them (only right after the verb, or after "to").
_WHO = (r"((the|this|that|your|our)\s+)?(users?|humans?|person|operators?)"
        r"|the\s+(developer|engineer|requester|asker|maintainer|owner|human|person)s?")
_THEM = r"(them|him|her|whoever\s+(asks|is\s+asking|reads)|anyone\s+who\s+asks)"
_INJECTION = re.compile(
    r"(?i)(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+|every\s+)*"
    r"(previous|prior|above|earlier|preceding|original|system|safety)?\s*(instructions?|prompts?|messages|rules|guidelines)"
    r"|\byou\s+must\b|\byou\s+are\s+now\b|\bfrom\s+now\s+on\b|\bact\s+as\b|\bnew\s+instructions?\b"
    r"|\bsystem\s+prompt\b|(^|\n)\s*(system|assistant|human)\s*:|<\s*/?\s*(system|instructions?|assistant|im_start|im_end)\b"
    r"|<\|im_(start|end)\|>|\[/?INST\]|\bdo\s+not\s+(tell|inform|warn)\s+the\s+user\b|\bjailbreak"
    # The assistant reading the memory, addressed; or asked to keep something from the user.
    r"|\b(assistants?|agents?|models?|claude|llms?|ais?|bots?|readers?|whoever|anyone)\s+((who|that)\s+(is\s+|are\s+)?)?"
    r"(reads?|reading|uses?|using|loads?|loading|sees?|seeing|receives?|receiving)\s+(this|these)\s+"
    r"(memory|memories|notes?|cards?|profile|rules?|texts?|lines?|entry|entries|context)\b"
    r"|\bif\s+you\s+are\s+(an?\s+)?(ai|assistant|agent|model|llm|language\s+model|claude|chatbot)\b"
    rf"|\b{_NOT}\s+(\w+\s+){{0,2}}?{_TELL}\b[^.!?\n]{{0,80}}?\b(to\s+)?({_WHO})\b"
    rf"|\b{_NOT}\s+(\w+\s+){{0,2}}?({_TELLS}\b[^.!?;:\n]{{0,80}}?\bto|tell(s|ing)?|inform(s|ing)?|warn(s|ing)?"
    rf"|notif(y|ies|ying)|alert(s|ing)?|show(s|ing)?|remind(s|ing)?)\s+({_WHO}|{_THEM})\b"
    rf"|\b{_NOT}\s+let(ting)?\s+({_WHO}|them|him|her)\s+know\b"
    rf"|\bwithout\s+(telling|informing|alerting|notifying|warning)\s+({_WHO}|{_THEM})\b"
    rf"|\b(keep|hide|conceal|withhold)\s+([\w'-]+\s+){{0,4}}?(away\s+)?from\s+({_WHO}|them|him|her)\b"
    rf"|\b(leave|keep)\s+({_WHO}|them|him|her)\s+(unaware|uninformed|in\s+the\s+dark)\b"
    r"|\bkeep\s+(it|this|that|these|those|everything|anything|(the\s+)?([\w-]+\s+)?(?!(output|logs?|console|terminal"
    r"|builds?|fans?|room|noise|logging|alerts?|notifications?)\b)[\w-]+)\s+(quiet|hushed|under\s+wraps)\b"
    r"|\bkeep\s+quiet\s+about\b|\bkeep\s+([\w-]+\s+){0,3}?to\s+yourself\b"
    r"|\b(do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not|shouldn'?t)\s+bring\s+up\b"
    r"|\bavoid(ing)?\s+(telling|informing|notifying|alerting|warning|bringing\s+up)\b"
    rf"|\bsecret\s+from\s+({_WHO}|them|him|her)\b"
    rf"|\b{_NOT}\s+(reveal|disclose|divulge|mention|acknowledge)\s+(this|these|that|it|them|quipu|anything"
    r"|the\s+existence|(any|the|your)\s+(memor\w*|notes?|rules?|instructions?|contents?|sources?|store|card|profile))\b"
)

# What weakens a safeguard (see the module contract); ``safeguard_hit`` reads it unless forbidden.
_OFF = (r"(disabl(e|es|ed|ing)|deactivat(e|es|ed|ing)|skip(s|ped|ping)?|bypass(es|ed|ing)?|ignor(e|es|ed|ing)"
        r"|circumvent(s|ed|ing)?|(turn(s|ed|ing)?|switch(es|ed|ing)?|shut(s|ting)?)\s+off)")
_GUARD = (r"((all|the|any|every|its|their|his|her|my|your|our|these|those)\s+)?"
          r"((ssl|tls|https|x\.?509|certificates?|certs?|signatures?|gpg|host[\s-]?keys?|hostnames?|permission|security"
          r"|safety|ci|pre-?commit|pre-?push|commit|git|lint|unit|integration|type|status|required|branch)[\s/-]+){0,2}"
          r"(verification|verifying|validation|checks?|checking|hooks?|pre-?commit|pre-?push|tests?|testing|linters?"
          r"|linting|lint|sandbox(es|ing)?|permissions?|confirmations?|approvals?|prompts?|safety|security|guards?"
          r"|guardrails?|pinning|protection|(ssl|tls|certificate|cert)\s+(errors?|warnings?))\b"
          r"(?!\s+(e-?mails?|mails?|messages?|letters?|meetings?|folders?|director(y|ies)|dirs?|files?|paths?|data"
          r"|fixtures?|codes?|numbers?|pages?|screens?)\b)")
_SHELL = r"(\S*/)?((ba|z|da|k|fi|c|tc)?sh|python[\d.]*|perl|ruby|node|php|iex|pwsh|powershell)\b"
SAFEGUARD = re.compile(
    r"(?i)--no-verify\b|\bdangerously[-_][\w-]+|\bbypassPermissions\b|\bdisableAllHooks\b|\bQUIPU_CHILD\b"
    rf"|\b{_OFF}\s+{_GUARD}"
    rf"|\b(turn(s|ed|ing)?|switch(es|ed|ing)?|shut(s|ting)?)\s+{_GUARD}\s+off\b"
    rf"|{_GUARD}\s+((is|are|was|were|be|been|being|get|gets|got|stays?|left|kept)\s+)?"
    r"(disabled|deactivated|turned\s+off|switched\s+off|skipped|bypassed)\b|\b(verification|sandbox)\s+off\b"
    r"|\brm\s+-[a-z]*r[a-z]*f?\s+[/~]|\bchmod\s+(-R\s+)?777\b|\bgit\s+push\s+(-f|--force)\b|\bsudo\b"
    # a download run by a shell or an interpreter
    rf"|\b(curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|]{{0,300}}\|\s*(sudo\s+(-\S+\s+)*)?{_SHELL}"
    r"|\b((ba|z|da|k)?sh|python[\d.]*)\s+(-\S+\s+)*(<\(|-c\s+[\"']?\$\()\s*(curl|wget)\b"
    r"|\bpip(e|es|ed|ing)\s+(curl|wget|downloads?|downloaded\s+[\w-]+|([\w-]+\s+)?scripts?\s+from"
    r"|(the\s+|an?\s+)?(install(er|ation)?|remote|online|web)\s+scripts?)\b[^.;\n]{0,60}?\b(in)?to\s+(an?\s+|the\s+)?"
    r"(sudo\s+)?((ba|z|da|k|fi)?sh|shell|python[\d.]*|perl|ruby|node|interpreter)\b"
    # verification turned off by a flag, a variable or a config key
    r"|--insecure\b|--no-check-certificate\b|\bcurl\b[^\n|;&]{0,300}?\s(?-i:-[a-zA-Z]*k[a-zA-Z]*)(?![\w-])"
    r"|\bNODE_TLS_REJECT_UNAUTHORIZED\b(?!\s*(=|to)\s*[\"']?1)|\bPYTHONHTTPSVERIFY\b(?!\s*(=|to)\s*[\"']?1)"
    r"|\bGIT_SSL_NO_VERIFY\b|\bsslVerify\b\W{0,3}(false|0|no|off)\b|\bstrict[-_]ssl\b\W{0,3}(false|0|no|off)\b"
    r"|\b(REQUESTS|CURL)_CA_BUNDLE\s*=\s*(\"\"|''|(?=\s|$))|\b(REQUESTS|CURL)_CA_BUNDLE\b[^.\n]{0,20}\bempty\b"
    r"|\b(verify|verify_ssl|ssl_verify|verify_certs?|check_hostname|reject_?unauthorized)\s*[=:]\s*[\"']?(false|0|no|off|none)\b"
    r"|\binsecure[-_]?skip[-_]?verify\b\W{0,3}true\b|\bCERT_NONE\b|StrictHostKeyChecking\W{0,3}(no|off|false)\b"
    r"|UserKnownHostsFile\W{0,3}/dev/null\b|\bcore\.hooksPath\W{0,3}/dev/null\b"
    # approval given in advance
    r"|\bauto[\s-]?(approv|accept|allow|confirm)\w*|\byolo\b|\bacceptEdits\b|(--yes|\byes)\s+to\s+(everything|all)\b"
    r"|\b(approv|accept|allow)(e|es|ed|ing|s)?\s+(everything\b|(all|every|any)\s+(edits?|tool\s+calls?|tools?|commands?"
    r"|permissions?|prompts?|requests?|actions?)\b)"
    r"|\b(no|without)\s+(any\s+)?(confirmations?|permission\s+prompts?|approvals?)\b"
)
# A hit is forbidden, not asked for, when an odd number of negations (``_NEGATES``; "forget",
# "hesitate"... turn one back) stand before it in its clause, the last within five words, and
# nothing like "ask" or "before" between: "never run with --yolo", "the user refuses to curl -k".
_NEGATES = frozenset("""never not cannot without nor dont avoid avoids avoided avoiding refuse refuses refused
refusing refrain refrains forbid forbids forbade forbidden prohibit prohibits prohibited forget forgets forgot
fail fails failed hesitate hesitates hesitated neglect neglects mind minds stop stops afraid scared shy hesitant
reluctant bother bothers""".split())
_BLOCKERS = frozenset("ask asks asked asking before after until till when whenever if once only just even except "
                      "wait waits waiting first always".split())
_CLAUSE_END = re.compile(r"(?i)[.;:!?,()\[\]\n]|\b(?:and|but|then|so|because|while|whereas|unless|except|instead|yet)\b")


def _forbidden(before: str) -> bool:
    clause = _CLAUSE_END.split(before.replace("’", "'"))[-1].lower().replace("no longer", "never")
    words = re.findall(r"[a-z]+(?:'[a-z]+)?", clause)[-8:]
    marks = [n for n, w in enumerate(words) if w in _NEGATES or w.endswith("n't")]
    if not marks:
        return False
    between = words[marks[-1] + 1:]
    return len(marks) % 2 == 1 and len(between) <= 5 and not _BLOCKERS.intersection(between)


def safeguard_hit(text: str) -> str | None:
    """The first phrase of ``text`` that weakens a safeguard and is not forbidden there, or None."""
    for m in SAFEGUARD.finditer(text):
        if not _forbidden(text[: m.start()]):
            return " ".join(m.group(0).split())
    return None


# First words of a sentence in the imperative mood: a command to the agent, not a claim.
IMPERATIVE_STARTS = frozenset("""
always never do don't dont make ensure remember use avoid run stop please keep check add write call
put be try prefer must should note set install commit push ask tell follow beware consider refrain
""".split())
_IMPERATIVE_ANYWHERE = re.compile(r"(?i)\byou\s+(should|need\s+to|have\s+to|shall|will\s+always|will\s+never|must)\b")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")
_LEAD = re.compile(r"^[\s\-*•>#\d.)\"'“”‘’(]+")

_TRANSIENT = re.compile(
    r"(?i)\btim(e|ed|es|ing)[\s-]?out\b|\btimeouts?\b|\b(429|500|502|503|504)\b|\brate[\s-]?limit|\bthrottl"
    r"|\bnetwork\s+(error|issue|problem|failure|glitch|hiccup)|\bconnection\s+(reset|refused|dropped|timed\s+out|error)"
    r"|\b(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN)\b|\btemporar(y|ily)\b|\bflak(y|iness)\b"
    r"|\bservice\s+unavailable\b|\bbad\s+gateway\b|\boverloaded\b|\bintermittent"
)
_CONDITION = re.compile(
    r"(?i)\b(above|below|over|under|per|after|when|whenever|if|unless|until|beyond|limit|max(imum)?)\b")
_EPISODIC = re.compile(
    r"(?i)\b(just|today|yesterday|earlier|right\s+now|currently|again|a\s+moment\s+ago|last\s+(night|time|run)"
    r"|this\s+(morning|afternoon|evening|session|time|run)|returned|failed|went\s+down|was\s+down|got|hit|threw|crashed)\b"
)
_ENVIRONMENT = re.compile(
    r"(?i)\bon\s+(my|this|your|the\s+user's)\s+(machine|laptop|box|computer|setup|workstation)\b"
    r"|\bin\s+(this|my|the\s+current)\s+(environment|container|sandbox|shell|venv|terminal)\b"
    r"|\bcommand\s+not\s+found\b|\bpermission\s+denied\b|\bno\s+such\s+file\s+or\s+directory\b"
    r"|\b(ModuleNotFoundError|ImportError|ENOENT|EACCES)\b|\bnot\s+installed\b|\bnot\s+on\s+(the\s+)?PATH\b"
)
_NEGATIVE_TOOL = re.compile(
    r"(?i)\b(doesn't|does\s+not|didn't|did\s+not|don't|do\s+not|won't|will\s+not|can't|cannot|can\s+not|isn't|is\s+not)\s+(really\s+)?work(ing)?\b"
    r"|\b(is|are|was|were|seems?|looks?|being)\s+(totally\s+|completely\s+|just\s+|so\s+)?(broken|buggy|unusable|useless|unreliable)\b"
    r"|\bnot\s+working\b|\bfails?\s+to\s+(work|run|start|install|load|build|compile)\b|\bkeeps\s+(crashing|failing|hanging)\b"
)
_ONE_OFF = re.compile(
    r"(?i)\b(yesterday|today|tonight|this\s+(morning|afternoon|evening|session)|last\s+night|earlier\s+today"
    r"|just\s+now|a\s+moment\s+ago|in\s+this\s+session|during\s+this\s+session)\b"
)


def _sentences(text: str) -> list[str]:
    return [s for s in (_LEAD.sub("", part).strip() for part in _SENTENCE_SPLIT.split(text)) if s]


def imperative_sentence(text: str) -> str | None:
    """The first sentence of ``text`` phrased as a command, or None."""
    for sentence in _sentences(text):
        first = sentence.split(None, 1)[0].lower().replace("’", "'").strip(",:;!")
        if first in IMPERATIVE_STARTS:
            return sentence
    m = _IMPERATIVE_ANYWHERE.search(text)
    return m.group(0) if m else None


def _found(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    return " ".join(m.group(0).split()) if m else None


# --------------------------------------------------------------------------------- the gates

def gate_secret(c: Candidate) -> str | None:
    spans = secrets_scan.find_secrets(c.all_text())
    return f"looks like a secret ({', '.join(sorted({s.kind for s in spans}))})" if spans else None


# The joiner and presentation selectors of emoji sequences: invisible too (a model is given text
# without them, a person sees them escaped), but no reason to refuse a note.
_EMOJI_PARTS = dict.fromkeys(map(ord, "\u200d\ufe0e\ufe0f"))


def gate_injection(c: Candidate) -> str | None:
    text = c.all_text()
    if fence.neutralise(text) != text:  # the fold the fence itself applies: look-alikes, invisibles, references
        return "text that opens or closes quipu's fence tag (<quipu-...>, or anything that reads as one)"
    plain = text.translate(_EMOJI_PARTS)
    if fence.clean(plain) != plain:
        return "control characters, terminal escape sequences or invisible characters (bidi, zero-width, tags)"
    hit = _found(_INJECTION, text)
    return f"text that instructs the agent: {hit!r}" if hit else None


def gate_malformed(c: Candidate) -> str | None:
    if not c.title or not c.statement:
        return "no title or no statement"
    if len(c.title) > MAX_TITLE or len(c.statement) > MAX_STATEMENT:
        return f"too long (title {len(c.title)}/{MAX_TITLE}, statement {len(c.statement)}/{MAX_STATEMENT})"
    if c.cls == "fact" and (not c.subject or not c.value):
        return "a fact needs a subject and a value"
    return None


def gate_outcome(c: Candidate) -> str | None:
    if c.outcome == "held":
        return None
    return f"outcome {c.outcome!r}: only what still held at the end of the session is captured"


def gate_kind(c: Candidate) -> str | None:
    return None if c.kind == "durable" else f"kind {c.kind!r}"


def gate_class(c: Candidate) -> str | None:
    if c.cls in CAPTURE_CLASSES:
        return None
    return f"class {c.cls!r} is not captured (one-off events are stories); allowed: {', '.join(CAPTURE_CLASSES)}"


def gate_imperative(c: Candidate) -> str | None:
    hit = imperative_sentence(c.claim_text())
    return f"phrased as a command, not a claim: {hit[:80]!r}" if hit else None


_QUESTION_START = re.compile(
    r"^(?:(?:how|what|where|when|why|who|which)\s+(?:do|does|did|is|are|was|were|can|could|should|would|will|to)"
    r"|(?:is|are|do|does|did|can|could|should|would|will|has|have)\s+(?:i|we|you|it|they|there|this|that))\b",
    re.IGNORECASE)


def gate_question(c: Candidate) -> str | None:
    """A question holds no claim: every sentence ends with '?', or one sentence opens like a question
    and does not end like a statement."""
    sentences = _sentences(c.statement)
    asked = bool(sentences) and all(s.rstrip().endswith("?") for s in sentences)
    if not asked and len(sentences) == 1:
        asked = bool(_QUESTION_START.match(sentences[0])) and not sentences[0].rstrip().endswith((".", "!"))
    return f"a question, not a claim: {sentences[0][:80]!r}" if asked else None


def gate_transient(c: Candidate) -> str | None:
    text = c.claim_text()
    hit = _found(_TRANSIENT, text)
    if hit and (_EPISODIC.search(text) or not _CONDITION.search(text)):
        return f"a transient error ({hit!r})"
    return None


def gate_environment(c: Candidate) -> str | None:
    hit = _found(_ENVIRONMENT, c.claim_text())
    return f"depends on one environment ({hit!r})" if hit else None


def gate_negative_tool(c: Candidate) -> str | None:
    hit = _found(_NEGATIVE_TOOL, c.claim_text())
    return f"a negative claim about a tool ({hit!r})" if hit else None


def gate_one_off(c: Candidate) -> str | None:
    hit = _found(_ONE_OFF, c.claim_text())
    return f"a one-off story ({hit!r})" if hit else None


GATES: tuple[tuple[str, Callable[[Candidate], str | None]], ...] = (
    ("secret", gate_secret),
    ("prompt-injection", gate_injection),
    ("malformed", gate_malformed),
    ("outcome", gate_outcome),
    ("kind", gate_kind),
    ("class", gate_class),
    ("imperative", gate_imperative),
    ("question", gate_question),
    ("transient-error", gate_transient),
    ("environment-dependent", gate_environment),
    ("negative-tool-claim", gate_negative_tool),
    ("one-off-story", gate_one_off),
)


def check(candidate: Candidate) -> Refusal | None:
    for name, gate in GATES:
        detail = gate(candidate)
        if detail is not None:
            return Refusal(name, detail)
    return None


def check_text(text: str, *, gates: Sequence[str] = ("secret", "prompt-injection", "imperative")) -> Refusal | None:
    """The gates that apply to any text quipu writes for someone (a fact value, an alias)."""
    probe = Candidate(cls="preference", title=text, statement=text, outcome="held")
    for name, gate in GATES:
        if name in gates:
            detail = gate(probe)
            if detail is not None:
                return Refusal(name, detail)
    return None


CARD_GATES = ("secret", "prompt-injection", "imperative", "safeguard")


def check_card(text: str, *, gates: Sequence[str] = CARD_GATES) -> Refusal | None:
    """What a line of the always-on card must pass (see the module contract)."""
    refusal = check_text(text, gates=gates)
    if refusal is None and "safeguard" in gates:
        hit = safeguard_hit(text)
        if hit:
            refusal = Refusal("safeguard", f"text that weakens a safeguard: {hit!r}")
    return refusal
