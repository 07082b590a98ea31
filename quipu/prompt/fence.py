"""Making stored text safe to inject into a model's context or print to a terminal.

This module is on the prompt path: standard library only, and not even ``re``. Contract:
- ``neutralise(text)`` makes every place that reads as a quipu fence tag (``<quipu-memory``,
  ``</quipu-always-on>``: a bracket, then optional slashes and spaces, then a name that starts
  with ``quipu``) inert by writing its bracket as ``[``, so stored text can neither close the
  "reference data" fence nor open a second one. What "reads as" is decided on a fold of the
  text (``fold``): each character's compatibility decomposition (NFKD, so fullwidth and math
  letters count) without combining marks, case-folded, with the look-alikes of the tag's
  letters and of ``<`` and ``/`` from Unicode's confusables list (``_LOOKALIKES``) and every
  angle-bracket-like character (``_BRACKETS``) read as what they look like; invisible
  characters (``invisible``) and spaces, ``-``, ``_``, ``.`` and dashes within the name are
  skipped, HTML character references (``&lt;``, ``&#x3c;``, ``&amp;lt;``, ``&ZeroWidthSpace;``)
  are read as the character they name, as ``html.unescape`` reads them, and ``%3C``,
  ``\\u003c`` and ``\\x3c`` as ``<``. A bracket written as a reference or escape is replaced whole.
- ``invisible(ch)``: the characters a person does not see and a model still reads: Unicode's
  format characters (category Cf: zero-width space and joiners, soft hyphen, word joiner, the
  bidi controls, the U+E0000 tag block) and the rest of the default-ignorable code points
  (variation selectors, U+034F, Hangul fillers, ...). ``INVISIBLE_RANGES`` lists them.
- ``clean(text)`` is what the CLI prints to a person: ANSI CSI and OSC escape sequences (7-bit and
  8-bit) and every other C0/C1 control character except newline and tab are removed, and each
  invisible character is shown escaped (``\\u200b``, ``\\U000e0041``).
- ``safe(text)`` is what reaches a model (recall, the always-on card, the MCP server's answers):
  the same controls removed, every invisible character removed, then ``neutralise``. The fold is
  only for the check: the text keeps its own characters. ``unicodedata`` is imported only when a
  bracket or reference is followed by a non-ASCII character, so ASCII text costs no import.
- ``visible(text)``: the same without ``neutralise``: what every offline pass sends a model (its
  prompt has fences of its own).
- ``unsafe(ch)``/``has_unsafe(text)``: the characters ``clean`` does not pass through as they are.
"""

TAG = "quipu"  # quipu-memory, quipu-always-on and any tag quipu may add
# What "<" folds to (NFKD, no marks, case-folded): the less-than sign and every angle-bracket-like
# character (names with LESS-THAN, LEFT-POINTING ANGLE, LEFT ANGLE, LEFT ARROWHEAD, the confusables
# of "<", a few left-pointing triangles).
_BRACKETS = (
    "<\xab\u02c2\u02f1\u140a\u1438\u16b2\u2039\u2264\u2266\u2268\u226a\u2272\u2276\u2277\u22b2\u22d6\u22d8"
    "\u22da\u22db\u22dc\u22e6\u2343\u25c1\u25c5\u276c\u276e\u2770\u27e8\u27ea\u2976\u2977\u2989\u2991\u2993"
    "\u2996\u29c0\u29fc\u2a79\u2a7b\u2a7d\u2a7f\u2a81\u2a83\u2a85\u2a87\u2a89\u2a8b\u2a8c\u2a8d\u2a8f\u2a90"
    "\u2a91\u2a92\u2a93\u2a94\u2a95\u2a97\u2a99\u2a9b\u2a9d\u2a9f\u2aa1\u2aa3\u2aa4\u2aa5\u2aa6\u2aa8\u2af7"
    "\u2af9\u3008\u300a\U0001d236"
)
# Every character that folds to one of them (the brackets themselves, fullwidth and small forms,
# negated and vertical forms), and "&", "%" and "\\", which may begin a reference to one or an
# escape of it (``%3C``, ``\\u003c``, ``\\x3c``): the quick look.
_OPENERS = frozenset(_BRACKETS + "&%\\\u226e\u2270\u2274\u2278\u2279\u22ea\u2329\ufe3d\ufe3f\ufe64\uff1c")
# Unicode's confusables (confusables.txt) of the tag's letters, of "<", "/" and "\", by the
# folded character, and a few visual look-alikes the list lacks (Cyrillic tse and dzhe, Greek mu
# for "u"; "l", "1" and "|" for "i", as the list reads a capital I).
_LOOKALIKES = {
    "i": "l1|\u0131\u01c0\u0269\u026a\u03b9\u0456\u04cf\u06f1\u13a5\u16c1\u2223\u2373\u23fd\u2502\u2c93\u2d4f"
         "\ua4f2\ua647\U0001028a\U00010309\U00010320\U000118c3\U00016f28",
    "u": "\u028b\u03bc\u03c5\u0446\u045f\u057d\u1200\u144c\u1d1c\u222a\u22c3\ua4f4\ua79f\uab4e\uab52"
         "\U000104f6\U000118d8\U00016f42",
    "p": "\u03c1\u0440\u13e2\u146d\u2374\u2ca3\ua4d1\U00010295",
    "q": "\u051b\u0563\u0566\u2d55",
    "/": "\u1735\u2041\u2044\u2215\u2571\u27cb\u29f8\u2cc7\u3033\u30ce\u31d3\u4e3f\U0001d23a",
    "\\": "\u2216\u27cd\u29f5\u29f9\u31d4\u4e36\U0001d20f\U0001d23b",
}
_SKIP = frozenset("/\\")  # between the bracket and the name, besides what may be within it:
_NAME_NOISE = frozenset("-_.\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2800")  # dashes, blanks and any space
# Escapes of "<" a reader of code may take for the bracket itself (lower-cased, after its first character).
_ESCAPED_BRACKETS = {"%": ("3c",), "\\": ("u003c", "x3c", "u0000003c")}
# Invisible characters: category Cf and the default-ignorable code points, as inclusive ranges.
INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
_invisible_bmp: "frozenset[str]" = frozenset()  # built at the first look
# Those a str's isprintable() passes (marks and fillers); the rest of them are not printable.
_PRINTABLE_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
                                 "\ufe00\ufe01\ufe02\ufe03\ufe04\ufe05\ufe06\ufe07\ufe08\ufe09\ufe0a"
                                 "\ufe0b\ufe0c\ufe0d\ufe0e\ufe0f")
_ESC = "\x1b"
_CSI8 = "\x9b"
_OSC8 = "\x9d"
_ST8 = "\x9c"
_STRING8 = frozenset("\x90\x98\x9d\x9e\x9f")  # 8-bit DCS, SOS, OSC, PM, APC: run to a terminator
_folded: "dict[str, str]" = {}  # the fold of each non-ASCII character seen


def invisible(ch: str) -> bool:
    global _invisible_bmp
    if ch < "\U00010000":
        if not _invisible_bmp:
            _invisible_bmp = frozenset(chr(c) for lo, hi in INVISIBLE_RANGES if hi < 0x10000 for c in range(lo, hi + 1))
        return ch in _invisible_bmp
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in INVISIBLE_RANGES if lo >= 0x10000)


def _fold_char(ch: str) -> str:
    """``ch`` as the tag check reads it: "" for an invisible character, else NFKD without marks,
    case-folded, look-alikes read as what they look like (possibly several characters)."""
    if ch < "\x80":
        low = ch.lower()
        return "i" if low in "l1|" else low
    done = _folded.get(ch)
    if done is not None:
        return done
    if not _folded:
        for target, chars in _LOOKALIKES.items():
            for c in chars:
                _folded[c] = target
        done = _folded.get(ch)
        if done is not None:
            return done
    if invisible(ch):
        out = ""
    else:
        import unicodedata

        parts = []
        for c in unicodedata.normalize("NFKD", ch):
            if invisible(c) or unicodedata.category(c) in ("Mn", "Me"):
                continue
            for f in c.casefold():
                parts.append(_folded.get(f) or ("i" if f in "l1|" else f))
        out = "".join(parts)
    if len(_folded) < 10_000:
        _folded[ch] = out
    return out


# ------------------------------------------------------------------ HTML character references

# The references html.unescape reads as a character the check cares about (its fold has a
# bracket, a slash, a letter of the tag, a space, a dash or "&", or is empty): each value, then
# its names (a name without ";" is one html.unescape also reads without it, the longest prefix
# winning); all of them from html.entities.html5, and read into ``_REFS`` at the first reference.
_REF_TABLE = (
    "\t\x1fTab;\x1e\n\x1fNewLine;\x1e&\x1fAMP AMP; amp amp;\x1e.\x1fperiod;\x1e/\x1fsol;\x1e<"
    "\x1fLT LT; lt lt;\x1e<\u20d2\x1fnvlt;\x1e\\\x1fbsol;\x1e_\x1fUnderBar; lowbar;\x1e|\x1fVerticalL"
    "ine; verbar; vert;\x1e\xa0\x1fNonBreakingSpace; nbsp nbsp;\x1e\xa8\x1fDot; DoubleDot; die; uml u"
    "ml;\x1e\xab\x1flaquo laquo;\x1e\xad\x1fshy shy;\x1e\xaf\x1fmacr macr; strns;\x1e\xb4\x1fDiacriti"
    "calAcute; acute acute;\x1e\xb5\x1fmicro micro;\x1e\xb8\x1fCedilla; cedil cedil;\x1e\xb9"
    "\x1fsup1 sup1;\x1e\xbc\x1ffrac14 frac14;\x1e\xbd\x1ffrac12 frac12; half;\x1e\xbe\x1ffrac34 frac3"
    "4;\x1e\xcc\x1fIgrave Igrave;\x1e\xcd\x1fIacute Iacute;\x1e\xce\x1fIcirc Icirc;\x1e\xcf\x1fIuml I"
    "uml;\x1e\xd9\x1fUgrave Ugrave;\x1e\xda\x1fUacute Uacute;\x1e\xdb\x1fUcirc Ucirc;\x1e\xdc"
    "\x1fUuml Uuml;\x1e\xec\x1figrave igrave;\x1e\xed\x1fiacute iacute;\x1e\xee\x1ficirc icirc;\x1e"
    "\xef\x1fiuml iuml;\x1e\xf9\x1fugrave ugrave;\x1e\xfa\x1fuacute uacute;\x1e\xfb\x1fucirc ucirc;"
    "\x1e\xfc\x1fuuml uuml;\x1e\u0128\x1fItilde;\x1e\u0129\x1fitilde;\x1e\u012a\x1fImacr;\x1e\u012b"
    "\x1fimacr;\x1e\u012e\x1fIogon;\x1e\u012f\x1fiogon;\x1e\u0130\x1fIdot;\x1e\u0131\x1fimath; inodot"
    ";\x1e\u0132\x1fIJlig;\x1e\u0133\x1fijlig;\x1e\u0139\x1fLacute;\x1e\u013a\x1flacute;\x1e\u013b"
    "\x1fLcedil;\x1e\u013c\x1flcedil;\x1e\u013d\x1fLcaron;\x1e\u013e\x1flcaron;\x1e\u013f\x1fLmidot;"
    "\x1e\u0140\x1flmidot;\x1e\u0168\x1fUtilde;\x1e\u0169\x1futilde;\x1e\u016a\x1fUmacr;\x1e\u016b"
    "\x1fumacr;\x1e\u016c\x1fUbreve;\x1e\u016d\x1fubreve;\x1e\u016e\x1fUring;\x1e\u016f\x1furing;"
    "\x1e\u0170\x1fUdblac;\x1e\u0171\x1fudblac;\x1e\u0172\x1fUogon;\x1e\u0173\x1fuogon;\x1e\u02d8"
    "\x1fBreve; breve;\x1e\u02d9\x1fDiacriticalDot; dot;\x1e\u02da\x1fring;\x1e\u02db\x1fogon;\x1e"
    "\u02dc\x1fDiacriticalTilde; tilde;\x1e\u02dd\x1fDiacriticalDoubleAcute; dblac;\x1e\u0311"
    "\x1fDownBreve;\x1e\u0399\x1fIota;\x1e\u039c\x1fMu;\x1e\u03a1\x1fRho;\x1e\u03a5\x1fUpsilon;\x1e"
    "\u03b9\x1fiota;\x1e\u03bc\x1fmu;\x1e\u03c1\x1frho;\x1e\u03c5\x1fupsi; upsilon;\x1e\u03d2"
    "\x1fUpsi; upsih;\x1e\u03f1\x1frhov; varrho;\x1e\u0406\x1fIukcy;\x1e\u0407\x1fYIcy;\x1e\u040f"
    "\x1fDZcy;\x1e\u0420\x1fRcy;\x1e\u0426\x1fTScy;\x1e\u0440\x1frcy;\x1e\u0446\x1ftscy;\x1e\u0456"
    "\x1fiukcy;\x1e\u0457\x1fyicy;\x1e\u045f\x1fdzcy;\x1e\u2002\x1fensp;\x1e\u2003\x1femsp;\x1e"
    "\u2004\x1femsp13;\x1e\u2005\x1femsp14;\x1e\u2007\x1fnumsp;\x1e\u2008\x1fpuncsp;\x1e\u2009"
    "\x1fThinSpace; thinsp;\x1e\u200a\x1fVeryThinSpace; hairsp;\x1e\u200b\x1fNegativeMediumSpace; Neg"
    "ativeThickSpace; NegativeThinSpace; NegativeVeryThinSpace; ZeroWidthSpace;\x1e\u200c\x1fzwnj;"
    "\x1e\u200d\x1fzwj;\x1e\u200e\x1flrm;\x1e\u200f\x1frlm;\x1e\u2010\x1fdash; hyphen;\x1e\u2013"
    "\x1fndash;\x1e\u2014\x1fmdash;\x1e\u2015\x1fhorbar;\x1e\u2025\x1fnldr;\x1e\u2026\x1fhellip; mldr"
    ";\x1e\u2039\x1flsaquo;\x1e\u203e\x1fOverBar; oline;\x1e\u2041\x1fcaret;\x1e\u2044\x1ffrasl;\x1e"
    "\u205f\x1fMediumSpace;\x1e\u205f\u200a\x1fThickSpace;\x1e\u2060\x1fNoBreak;\x1e\u2061\x1fApplyFu"
    "nction; af;\x1e\u2062\x1fInvisibleTimes; it;\x1e\u2063\x1fInvisibleComma; ic;\x1e\u20db"
    "\x1fTripleDot; tdot;\x1e\u20dc\x1fDotDot;\x1e\u2105\x1fincare;\x1e\u2110\x1fIscr; imagline;\x1e"
    "\u2111\x1fIfr; Im; image; imagpart;\x1e\u2112\x1fLaplacetrf; Lscr; lagran;\x1e\u2113\x1fell;"
    "\x1e\u2119\x1fPopf; primes;\x1e\u211a\x1fQopf; rationals;\x1e\u2148\x1fImaginaryI; ii;\x1e"
    "\u2153\x1ffrac13;\x1e\u2154\x1ffrac23;\x1e\u2155\x1ffrac15;\x1e\u2156\x1ffrac25;\x1e\u2157"
    "\x1ffrac35;\x1e\u2158\x1ffrac45;\x1e\u2159\x1ffrac16;\x1e\u215a\x1ffrac56;\x1e\u215b\x1ffrac18;"
    "\x1e\u215c\x1ffrac38;\x1e\u215d\x1ffrac58;\x1e\u215e\x1ffrac78;\x1e\u2212\x1fminus;\x1e\u2216"
    "\x1fBackslash; setminus; setmn; smallsetminus; ssetmn;\x1e\u2223\x1fVerticalBar; mid; shortmid; "
    "smid;\x1e\u2224\x1fNotVerticalBar; nmid; nshortmid; nsmid;\x1e\u222a\x1fcup;\x1e\u222a\ufe00"
    "\x1fcups;\x1e\u2264\x1fle; leq;\x1e\u2264\u20d2\x1fnvle;\x1e\u2266\x1fLessFullEqual; lE; leqq;"
    "\x1e\u2266\u0338\x1fnlE; nleqq;\x1e\u2268\x1flnE; lneqq;\x1e\u2268\ufe00\x1flvertneqq; lvnE;"
    "\x1e\u226a\x1fLt; NestedLessLess; ll;\x1e\u226a\u0338\x1fNotLessLess; nLtv;\x1e\u226a\u20d2"
    "\x1fnLt;\x1e\u226e\x1fNotLess; nless; nlt;\x1e\u2270\x1fNotLessEqual; nle; nleq;\x1e\u2272"
    "\x1fLessTilde; lesssim; lsim;\x1e\u2274\x1fNotLessTilde; nlsim;\x1e\u2276\x1fLessGreater; lessgt"
    "r; lg;\x1e\u2277\x1fGreaterLess; gl; gtrless;\x1e\u2278\x1fNotLessGreater; ntlg;\x1e\u2279"
    "\x1fNotGreaterLess; ntgl;\x1e\u22b2\x1fLeftTriangle; vartriangleleft; vltri;\x1e\u22c3\x1fUnion;"
    " bigcup; xcup;\x1e\u22d6\x1flessdot; ltdot;\x1e\u22d8\x1fLl;\x1e\u22d8\u0338\x1fnLl;\x1e\u22da"
    "\x1fLessEqualGreater; leg; lesseqgtr;\x1e\u22da\ufe00\x1flesg;\x1e\u22db\x1fGreaterEqualLess; ge"
    "l; gtreqless;\x1e\u22db\ufe00\x1fgesl;\x1e\u22e6\x1flnsim;\x1e\u22ea\x1fNotLeftTriangle; nltri; "
    "ntriangleleft;\x1e\u2502\x1fboxv;\x1e\u27e8\x1fLeftAngleBracket; lang; langle;\x1e\u27ea"
    "\x1fLang;\x1e\u2976\x1fltlarr;\x1e\u2991\x1flangd;\x1e\u2993\x1flparlt;\x1e\u2996\x1fltrPar;"
    "\x1e\u29c0\x1folt;\x1e\u2a79\x1fltcir;\x1e\u2a7b\x1fltquest;\x1e\u2a7d\x1fLessSlantEqual; leqsla"
    "nt; les;\x1e\u2a7d\u0338\x1fNotLessSlantEqual; nleqslant; nles;\x1e\u2a7f\x1flesdot;\x1e\u2a81"
    "\x1flesdoto;\x1e\u2a83\x1flesdotor;\x1e\u2a85\x1flap; lessapprox;\x1e\u2a87\x1flne; lneq;\x1e"
    "\u2a89\x1flnap; lnapprox;\x1e\u2a8b\x1flEg; lesseqqgtr;\x1e\u2a8c\x1fgEl; gtreqqless;\x1e\u2a8d"
    "\x1flsime;\x1e\u2a8f\x1flsimg;\x1e\u2a90\x1fgsiml;\x1e\u2a91\x1flgE;\x1e\u2a92\x1fglE;\x1e"
    "\u2a93\x1flesges;\x1e\u2a94\x1fgesles;\x1e\u2a95\x1fels; eqslantless;\x1e\u2a97\x1felsdot;\x1e"
    "\u2a99\x1fel;\x1e\u2a9d\x1fsiml;\x1e\u2a9f\x1fsimlE;\x1e\u2aa1\x1fLessLess;\x1e\u2aa1\u0338"
    "\x1fNotNestedLessLess;\x1e\u2aa4\x1fglj;\x1e\u2aa5\x1fgla;\x1e\u2aa6\x1fltcc;\x1e\u2aa8"
    "\x1flescc;\x1e\ufb01\x1ffilig;\x1e\ufb02\x1ffllig;\x1e\ufb03\x1fffilig;\x1e\ufb04\x1fffllig;"
    "\x1e\U0001d4ab\x1fPscr;\x1e\U0001d4ac\x1fQscr;\x1e\U0001d4b0\x1fUscr;\x1e\U0001d4be\x1fiscr;"
    "\x1e\U0001d4c1\x1flscr;\x1e\U0001d4c5\x1fpscr;\x1e\U0001d4c6\x1fqscr;\x1e\U0001d4ca\x1fuscr;"
    "\x1e\U0001d50f\x1fLfr;\x1e\U0001d513\x1fPfr;\x1e\U0001d514\x1fQfr;\x1e\U0001d518\x1fUfr;\x1e"
    "\U0001d526\x1fifr;\x1e\U0001d529\x1flfr;\x1e\U0001d52d\x1fpfr;\x1e\U0001d52e\x1fqfr;\x1e"
    "\U0001d532\x1fufr;\x1e\U0001d540\x1fIopf;\x1e\U0001d543\x1fLopf;\x1e\U0001d54c\x1fUopf;\x1e"
    "\U0001d55a\x1fiopf;\x1e\U0001d55d\x1flopf;\x1e\U0001d561\x1fpopf;\x1e\U0001d562\x1fqopf;\x1e"
    "\U0001d566\x1fuopf;"
)
_REFS: "dict[str, str]" = {}
# Every other name html.unescape reads without ";" (each a character of no interest here).
_LEGACY_NAMES = (
    "AElig Aacute Acirc Agrave Aring Atilde Auml COPY Ccedil ETH Eacute Ecirc Egrave Euml GT Iacute Icirc "
    "Igrave Iuml Ntilde Oacute Ocirc Ograve Oslash Otilde Ouml QUOT REG THORN Uacute Ucirc Ugrave Uuml Yacute "
    "aacute acirc acute aelig agrave aring atilde auml brvbar ccedil cedil cent copy curren deg divide eacute "
    "ecirc egrave eth euml frac12 frac14 frac34 gt iacute icirc iexcl igrave iquest iuml macr middot not "
    "ntilde oacute ocirc ograve ordf ordm oslash otilde ouml para plusmn pound quot raquo reg sect sup1 sup2 "
    "sup3 szlig thorn times uacute ucirc ugrave uml uuml yacute yen yuml"
)
_LEGACY: "set[str]" = set()
_OTHER = "\ufffd"  # a character the check does not care about


def _ref(text: str, k: int) -> "tuple[str, int] | None":
    """The character of the reference whose name starts at ``k`` (just after an ``&``) and the
    index past it, as ``html.unescape`` reads it; None when it reads none there."""
    n = len(text)
    if k >= n:
        return None
    if text[k] == "#":
        j = k + 1
        hexa = j < n and text[j] in "xX"
        j += hexa
        digits = "0123456789abcdefABCDEF" if hexa else "0123456789"
        start = j
        while j < n and text[j] in digits:
            j += 1
        if j == start:
            return None
        number = text[start:j].lstrip("0") or "0"
        num = int(number, 16 if hexa else 10) if len(number) <= 8 else 0x110000
        end = j + (j < n and text[j] == ";")
        if num > 0x10FFFF or 0xD800 <= num <= 0xDFFF or num == 0:
            return _OTHER, end
        if 0x80 <= num <= 0x9F:  # read as windows-1252, as html.unescape does
            return {0x85: "\u2026", 0x8B: "\u2039", 0x96: "\u2013", 0x97: "\u2014", 0x98: "\u02dc"}.get(num, _OTHER), end
        if (num < 0x20 and num not in (9, 10, 12, 13)) or num == 0x7F or 0xFDD0 <= num <= 0xFDEF or num & 0xFFFE == 0xFFFE:
            return "", end  # html.unescape drops these
        return chr(num), end
    j = k
    while j < n and j - k < 32 and text[j] not in "\t\n\f <&#;":
        j += 1
    if j == k:
        return None
    if not _REFS:
        for record in _REF_TABLE.split("\x1e"):
            value, names = record.split("\x1f")
            _REFS.update(dict.fromkeys(names.split(), value))
        _LEGACY.update(_LEGACY_NAMES.split())
    if j < n and text[j] == ";":
        got = _REFS.get(text[k:j + 1])
        if got is not None:
            return got, j + 1
    for x in range(j - k, 1, -1):  # the longest name html.unescape reads without ";"
        name = text[k:k + x]
        got = _REFS.get(name)
        if got is not None:
            return got, k + x
        if name in _LEGACY:
            return _OTHER, k + x
    return None


def _unit(text: str, i: int) -> "tuple[str, int]":
    """The fold of the character or reference at ``i``, and the index past it."""
    ch = text[i]
    if ch != "&":
        for escape in _ESCAPED_BRACKETS.get(ch, ()):
            if text[i + 1:i + 1 + len(escape)].lower() == escape:
                return "<", i + 1 + len(escape)
        return _fold_char(ch), i + 1
    got = _ref(text, i + 1)
    if got is None:
        return "&", i + 1
    for _ in range(4):  # "&amp;lt;" reads as "&lt;" to a reader that unescapes once more
        if got[0] != "&":
            break
        again = _ref(text, got[1])
        if again is None:
            break
        got = again
    return "".join(_fold_char(c) for c in got[0]), got[1]


def _names_quipu(text: str, j: int) -> bool:
    """Whether, from ``j``, optional slashes and spaces then a name starting ``quipu`` follow."""
    n = len(text)
    name: list[str] = []
    while j < n and len(name) < len(TAG):
        folded, j = _unit(text, j)
        for c in folded:
            if c.isspace() or c in _NAME_NOISE or (not name and c in _SKIP):
                continue
            if not c.isalnum() or len(name) >= len(TAG):
                return "".join(name) == TAG
            name.append(c)
    return "".join(name) == TAG


def neutralise(text: str) -> str:
    if _OPENERS.isdisjoint(text):
        return text
    out: list[str] = []
    last = i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in _OPENERS:
            folded, end = _unit(text, i)
            if folded and folded[0] in _BRACKETS and _names_quipu(text, end):
                out.append(text[last:i])
                out.append("[")
                last = i = end
                continue
        i += 1
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def fold(text: str) -> str:
    """``text`` as the tag check reads it (each character or reference folded); for tests and gates."""
    out = []
    i = 0
    while i < len(text):
        folded, i = _unit(text, i)
        out.append(folded)
    return "".join(out)


# ------------------------------------------------------------------ controls and invisibles


def _escape_end(text: str, i: int) -> int:
    """The index just past the escape sequence starting at ``i`` (an ESC or an 8-bit CSI/string)."""
    n = len(text)
    ch = text[i]
    if ch == _ESC:
        if i + 1 >= n:
            return n
        kind = text[i + 1]
        if kind == "[":
            ch, i = _CSI8, i + 1
        elif kind in "]PX^_":
            ch, i = _OSC8, i + 1
        else:
            return i + 2  # a two-character escape (ESC c, ESC 7, ...)
    if ch == _CSI8:
        j = i + 1
        while j < n and not ("\x40" <= text[j] <= "\x7e"):
            j += 1
        return min(j + 1, n)
    # OSC, DCS and friends: up to BEL, ST (ESC \) or the 8-bit ST.
    j = i + 1
    while j < n:
        if text[j] in "\x07" + _ST8:
            return j + 1
        if text[j] == _ESC:
            return j + 2 if j + 1 < n and text[j + 1] == "\\" else j
        j += 1
    return n


def control(ch: str) -> bool:
    code = ord(ch)
    return (code < 32 and ch not in "\n\t") or 127 <= code < 160


def unsafe(ch: str) -> bool:
    return control(ch) or invisible(ch)


def has_unsafe(text: str) -> bool:
    """Whether any character of ``text`` is ``unsafe``: every one of them is unprintable but for
    a few marks and fillers, so most text is answered without a look at each character."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        if text.isascii() or (_PRINTABLE_INVISIBLE.isdisjoint(text) and max(text) < "\U000e0000"):
            return False
    return any(unsafe(ch) for ch in text)


def escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _clean(text: str, keep_invisible: bool) -> str:
    if not has_unsafe(text):
        return text
    out = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == _ESC or ch == _CSI8 or ch in _STRING8:
            i = _escape_end(text, i)
            continue
        if not control(ch):
            if not invisible(ch):
                out.append(ch)
            elif keep_invisible:
                out.append(escaped(ch))
        i += 1
    return "".join(out)


def visible(text: str) -> str:
    """What an offline model is given (a prompt with fences of its own): no escape sequence,
    control or invisible character."""
    return _clean(text, False)


def clean(text: str) -> str:
    """What a person is shown: no escape sequence or control character; invisible ones escaped."""
    return _clean(text, True)


def safe(text: str) -> str:
    """What a model is given: no escape sequence, control or invisible character; no quipu tag."""
    return neutralise(_clean(text, False))
