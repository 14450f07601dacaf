"""A deterministic yes/no matcher for answers to "should I …?", run before the model, and its words.

The rule: after normalising (case, accents, punctuation), an utterance is ``yes`` when it
starts with a yes phrase and every word after it is a yes phrase, a word on the yes tail
list (please, thanks, the action's verbs and nouns) or a word naming the pending action;
``no`` likewise with the no lists. Anything else is ``other``: a question (any ``?``), a
condition ("yes but first …"), an extra request, both polarities, or more than
``MAX_TOKENS`` words. Chinese is matched character by character with the same rule.
The person's language is used together with English.

**The words.** Heads start an utterance; tails are the only words allowed after a head of
the same polarity (politeness, the action's verbs and nouns). Phrases are separated by
``|``. Accents and case do not matter: the lists and the utterance are normalised alike.
The lists are data held as typed constants, not a file read at run time: nothing to load
on the event loop, nothing to be missing; a language is one more ``ConsentWords``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Literal

from ...chars import HAN

type Consent = Literal["yes", "no", "other"]
type _Phrase = tuple[str, ...]
type _Pick = Callable[[ConsentWords], str]

MAX_TOKENS = 16

_QUESTION = re.compile(r"[?？¿؟]")
_TOKEN = re.compile(rf"[{HAN}]|(?:(?![{HAN}])[^\W_])+(?:['\-](?:(?![{HAN}])[^\W_])+)*")
_STOP_WORDS = frozenset({"but", "not", "no", "wait", "first", "before", "after", "later"})
_STOP_CHARS = frozenset("不别但先等吗呢")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Grammar:
    """The phrases one polarity may start with, and those allowed after."""

    heads: frozenset[_Phrase]
    allowed: frozenset[_Phrase]
    longest: int


def tokens(text: str) -> list[str]:
    """Split normalised text into words; each Chinese character is a word of its own."""
    folded = unicodedata.normalize("NFKD", text.replace("’", "'").replace("‘", "'"))
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch)).casefold()
    return _TOKEN.findall(plain)


def match_consent(text: str, language: str, *, extra_words: Iterable[str] = ()) -> Consent:
    """Return whether ``text`` says yes, no, or something else; see the module rule.

    ``extra_words`` name the pending action (entity names, ids): they may follow a head,
    so "yes, unlock the front door" is a yes when "front door" names the target.
    """
    if _QUESTION.search(text):
        return "other"
    words = tokens(text)
    if not words or len(words) > MAX_TOKENS:
        return "other"
    extras = frozenset(
        (word,)
        for word in tokens(" ".join(extra_words))
        if word not in _STOP_WORDS and word not in _STOP_CHARS
    )
    yes_grammar, no_grammar = _grammars(_language_key(language))
    said_yes = _parses(words, yes_grammar, extras)
    said_no = _parses(words, no_grammar, extras)
    if said_yes and not said_no:
        return "yes"
    if said_no and not said_yes:
        return "no"
    return "other"


def _language_key(language: str) -> str:
    """Return the supported language for an HA language tag (``zh-Hans`` → ``zh``)."""
    primary = language.replace("_", "-").split("-", maxsplit=1)[0].lower()
    return primary if primary in LANGUAGES else "en"


@cache
def _grammars(key: str) -> tuple[_Grammar, _Grammar]:
    """Build the yes and no grammars of a language together with English."""
    tables = (LANGUAGES[key], EN) if key != "en" else (EN,)
    return (
        _grammar(tables, lambda w: w.yes, lambda w: w.yes_tail),
        _grammar(tables, lambda w: w.no, lambda w: w.no_tail),
    )


def _grammar(tables: Iterable[ConsentWords], heads_of: _Pick, tails_of: _Pick) -> _Grammar:
    """Tokenise one polarity's phrases of the given tables."""
    heads = frozenset(_phrase(p) for table in tables for p in heads_of(table).split("|")) - {()}
    tails = frozenset(_phrase(p) for table in tables for p in tails_of(table).split("|")) - {()}
    allowed = heads | tails
    return _Grammar(heads=heads, allowed=allowed, longest=max(map(len, allowed)))


def _phrase(text: str) -> _Phrase:
    """Tokenise one phrase of a word list."""
    return tuple(tokens(text))


def _parses(words: list[str], grammar: _Grammar, extras: frozenset[_Phrase]) -> bool:
    """Return True when words are one head followed only by allowed phrases."""
    reachable: set[int] = set()
    for size in range(1, min(grammar.longest, len(words)) + 1):
        if tuple(words[:size]) in grammar.heads:
            reachable.add(size)
    if not reachable:
        return False
    for start in range(1, len(words) + 1):
        if start not in reachable:
            continue
        if start == len(words):
            return True
        for size in range(1, min(grammar.longest, len(words) - start) + 1):
            piece = tuple(words[start : start + size])
            if piece in grammar.allowed or piece in extras:
                reachable.add(start + size)
    return False


# The words: what starts a consent, and what may follow it.
@dataclass(frozen=True, slots=True, kw_only=True)
class ConsentWords:
    """One language's phrases, each list a ``|``-separated string."""

    yes: str
    no: str
    yes_tail: str
    no_tail: str


EN = ConsentWords(
    yes=(
        "yes|yeah|yea|yep|yup|ya|sure|ok|okay|o k|k|alright|all right|confirm|confirmed|"
        "i confirm|go ahead|do it|please do|affirmative|correct|absolutely|definitely|"
        "of course|certainly|proceed|no problem|no worries|sounds good|that's right|"
        "that is right|go for it|yes please|please|indeed|right"
    ),
    no=(
        "no|nope|nah|no thanks|no thank you|cancel|stop|don't|dont|do not|abort|negative|"
        "never mind|nevermind|deny|denied|not now|forget it|no way|never|don't do it|"
        "better not|leave it"
    ),
    yes_tail=(
        "please|it|that|this|the|them|both|all|go|ahead|do|now|right|away|thanks|thank|"
        "you|sure|ok|okay|yes|yeah|confirm|confirmed|proceed|unlock|open|disarm|close|"
        "lock|turn|on|off|door|doors|garage|gate|alarm|i|i'm|im|am|just|so|indeed|said|"
        "my"
    ),
    no_tail=(
        "please|thanks|thank|you|don't|dont|do|not|it|that|this|the|now|no|nope|cancel|"
        "stop|unlock|open|disarm|door|garage|gate|alarm|leave|keep|locked|closed|armed|"
        "as|is|never|mind|forget|i|changed|my|yet|way|need|to|want"
    ),
)

ZH = ConsentWords(
    yes=(
        "是|是的|是啊|对|对的|对啊|好|好的|好啊|好吧|好嘞|行|行啊|可以|"
        "可以的|确认|确定|嗯|嗯嗯|没问题|执行|同意|当然|当然可以|要|去吧|"
        "开吧|對|確認|確定|沒問題|肯定"
    ),
    no=(
        "不|不要|不用|不用了|不行|不可以|别|别了|取消|算了|否|不是|停|停止|"
        "不好|不对|不了|拒绝|不必|不需要|先不要|还是不要|还是算了|別|不對|"
        "拒絕|還是不要"
    ),
    yes_tail=(
        "吧|啊|呀|的|了|请|谢谢|打开|开|开门|开锁|解锁|门|大门|车库|"
        "车库门|它|帮我|一下|现在|马上|立即|是的|好的|可以|确认|执行|开启|"
        "解除|撤防|警报|把|嗯|对|行|去|做|快|点|呗|哦|噢|車庫|開|門|"
        "解鎖|請|謝謝"
    ),
    no_tail=(
        "了|吧|啊|呀|的|要|用|开|打开|门|谢谢|先|现在|暂时|还是|保持|"
        "锁着|关着|别|不|算了|取消|它|开锁|解锁|開|門|謝謝|不用"
    ),
)

DE = ConsentWords(
    yes=(
        "ja|jawohl|ja bitte|genau|okay|ok|klar|na klar|sicher|bestätigen|bestätigt|"
        "ich bestätige|bestätige|mach das|mach es|mach's|mach schon|los|in ordnung|"
        "geht klar|richtig|gerne|gern|auf jeden fall|einverstanden|passt|jo|jep"
    ),
    no=(
        "nein|nee|ne|nö|abbrechen|abbruch|stopp|stop|nicht|lieber nicht|bitte nicht|"
        "auf keinen fall|vergiss es|niemals|auf gar keinen fall|nein danke|jetzt nicht|"
        "lass es"
    ),
    yes_tail=(
        "bitte|mach|es|das|ja|ok|okay|danke|jetzt|tür|die|der|den|auf|aufschließen|"
        "aufsperren|öffnen|öffne|entsperren|entriegeln|schließ|schließe|unscharf|"
        "schalten|schalte|los|sofort|gerne|genau|tor|garage|garagentor|schloss|alarm|"
        "alarmanlage|mach's|schon|ruhig"
    ),
    no_tail=(
        "nein|bitte|nicht|danke|lass|es|das|die|tür|zu|geschlossen|abbrechen|jetzt|doch|"
        "lieber|so|wie|ist|tor|garage|schloss|alarm|nö|nee|öffnen|aufschließen|mach|"
        "machen|abgeschlossen|bleiben|soll|lassen"
    ),
)

FR = ConsentWords(
    yes=(
        "oui|ouais|d'accord|ok|okay|bien sûr|vas-y|allez-y|c'est bon|confirme|confirmé|"
        "je confirme|exactement|tout à fait|absolument|volontiers|carrément|"
        "pas de problème|parfait|entendu|ça marche|oui oui|fais-le|allez"
    ),
    no=(
        "non|non merci|annule|annuler|pas maintenant|stop|arrête|laisse tomber|jamais|"
        "surtout pas|certainement pas|pas question|ne fais pas ça|ne le fais pas|laisse|"
        "non non"
    ),
    yes_tail=(
        "s'il|te|vous|plaît|merci|oui|ouvre|ouvrir|déverrouille|déverrouiller|désarme|"
        "désarmer|la|le|les|porte|garage|portail|alarme|maintenant|vas-y|allez-y|fais-le|"
        "fais|ça|c'est|bon|stp|svp|l'alarme|ferme|fermer|vas|y"
    ),
    no_tail=(
        "non|merci|pas|ne|le|la|fais|ça|laisse|fermé|fermée|porte|garage|alarme|portail|"
        "maintenant|s'il|te|vous|plaît|stp|svp|annule|surtout|ouvre|l'alarme|comme|c'est|"
        "tomber"
    ),
)

ES = ConsentWords(
    yes=(
        "sí|claro|claro que sí|vale|de acuerdo|ok|okay|confirmo|confirmado|adelante|"
        "hazlo|por supuesto|exacto|correcto|sin problema|dale|venga|perfecto|"
        "sí por favor|sí claro"
    ),
    no=(
        "no|no gracias|cancela|cancelar|para|déjalo|ni hablar|nunca|de ninguna manera|"
        "mejor no|todavía no|ahora no|no no"
    ),
    yes_tail=(
        "por|favor|gracias|sí|abre|abrir|desbloquea|desbloquear|desarma|desarmar|la|el|"
        "puerta|garaje|portón|alarma|ahora|hazlo|adelante|ya|dale|claro|lo|que|cierra|"
        "cerrar"
    ),
    no_tail=(
        "no|gracias|lo|la|hagas|abras|por|favor|cancela|déjala|cerrada|puerta|garaje|"
        "alarma|así|ahora|nada|déjalo|todavía|mejor|abrir|está"
    ),
)

NL = ConsentWords(
    yes=(
        "ja|jazeker|ja hoor|ja graag|oké|okee|ok|okay|prima|goed|is goed|doe maar|"
        "doe het|bevestig|bevestigd|ik bevestig|zeker|natuurlijk|akkoord|klopt|"
        "ga je gang|graag|tuurlijk"
    ),
    no=(
        "nee|neen|nee bedankt|annuleer|annuleren|stop|stoppen|niet doen|liever niet|"
        "laat maar|nooit|geen sprake van|echt niet|nu niet|nee dank je"
    ),
    yes_tail=(
        "graag|alsjeblieft|alstublieft|dank|je|bedankt|doe|het|de|deur|garage|garagedeur|"
        "poort|alarm|open|openen|ontgrendel|ontgrendelen|uitschakelen|schakel|uit|nu|ja|"
        "hoor|meteen|dicht"
    ),
    no_tail=(
        "nee|niet|doen|het|de|deur|dicht|laten|laat|maar|bedankt|dank|je|nu|annuleer|zo|"
        "alsjeblieft|op|slot|openen|poort|garage|alarm"
    ),
)

IT = ConsentWords(
    yes=(
        "sì|certo|va bene|ok|okay|d'accordo|confermo|confermato|procedi|fallo|certamente|"
        "esatto|perfetto|volentieri|vai|sì grazie|sì certo"
    ),
    no=(
        "no|no grazie|annulla|annullare|stop|ferma|lascia stare|lascia perdere|mai|"
        "per niente|non farlo|meglio di no|assolutamente no|non ora|no no"
    ),
    yes_tail=(
        "per|favore|grazie|sì|apri|aprire|sblocca|sbloccare|disattiva|disarma|la|il|"
        "porta|garage|cancello|allarme|adesso|ora|pure|fallo|vai|procedi|subito|"
        "l'allarme|chiudi"
    ),
    no_tail=(
        "no|grazie|non|farlo|lo|la|lascia|chiusa|porta|garage|allarme|così|ora|adesso|"
        "per|favore|aprire|aprirla|annulla"
    ),
)

PT = ConsentWords(
    yes=(
        "sim|claro|com certeza|ok|okay|pode|pode ser|tá bom|está bem|tudo bem|confirmo|"
        "confirmado|vai|faz|faça|certo|exato|beleza|perfeito|de acordo|bora|"
        "sim por favor"
    ),
    no=(
        "não|não obrigado|não obrigada|cancela|cancelar|pare|deixa|deixa pra lá|nunca|"
        "de jeito nenhum|agora não|melhor não|não não"
    ),
    yes_tail=(
        "por|favor|obrigado|obrigada|sim|abre|abrir|destranca|destrancar|desarma|"
        "desarmar|a|o|porta|garagem|portão|alarme|agora|pode|já|isso|fecha|fechar"
    ),
    no_tail=(
        "não|obrigado|obrigada|abre|abrir|a|o|porta|garagem|alarme|agora|assim|deixa|"
        "fechada|por|favor|cancela|faça|isso"
    ),
)

LANGUAGES: dict[str, ConsentWords] = {
    "en": EN,
    "zh": ZH,
    "de": DE,
    "fr": FR,
    "es": ES,
    "nl": NL,
    "it": IT,
    "pt": PT,
}
