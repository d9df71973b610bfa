// Package rules implements the rule language of docs/rules.md: a lexer and parser that
// report every compile error with its line and column, a compiler that turns a policy
// document or a label version into an immutable Plan, and an evaluator that scores
// content against a Plan and explains each decision in a Report.
//
// The package is pure domain code. It imports no other package of this project, does no
// I/O and needs no network: every built-in evaluator (exact, fuzzy, regex, sentiment,
// lexical concept, hash) and the BPE tokenizer work from data embedded in the binary.
// Signals that need a model (questions, and concepts when better than lexical matching is
// wanted) go through the SignalEvaluator seam, which a model backend implements.
//
// A Plan is safe for concurrent use: Evaluate keeps all per-content state in buffers
// taken from a pool for the duration of the call, so one compiled policy can serve every
// request of a version.
//
// # How text is matched
//
// Content is analysed once per evaluation. UAX #29 word segmentation (so CJK ideographs
// and emoji are words of their own) yields words, each normalised with NFKC and full
// case folding; the words form the exact stream. A second, fuzzy stream regroups the
// segments to undo obfuscation (leetspeak symbols glued to a word, single letters
// joined by separators or spaces) and maps each token to a fuzzy form: diacritics
// removed, non-Latin look-alikes replaced by their TR39 prototype, leet digits decoded,
// runs of one letter collapsed. Phrases are analysed the same way at compile time, so
// both sides always agree. The fuzzy stream also ignores invisible characters inside
// words (Unicode Cf: zero-width spaces and joiners, soft hyphens, direction marks;
// variation selectors) and reads styled letters as their base letters: NFKC folds the
// mathematical, fullwidth, circled, squared and parenthesized forms, and the fuzzy
// form the ones it leaves (regional indicators, negative circled and squared letters).
//
// A plan also compiles a fuzzy vocabulary: the automaton's words plus, for each word
// of a fuzzy phrase, the fuzzy forms of its regular inflections (-s, -es, -ed, -ing,
// -er, 's) and, for 4-letter words, of each swap of two adjacent letters (score 0.8).
// A content token still costs one hash probe however many phrases there are, and the
// exact stream keeps the automaton's own vocabulary, so =("idiot") never matches
// "idiots". A token that matches nothing and is no dictionary word is split, when it
// can be, into dictionary words one of which is a phrase word ("youidiot"), at a
// bounded cost: at most 24 letters, parts of at most 16.
//
// All exact and fuzzy phrases of a plan are compiled into one Aho-Corasick automaton
// over word ids: phrases only ever match whole words, so a word no phrase contains costs
// one hash lookup and the cost per word does not grow with the number of phrases.
//
// False positives are the costly failure, so fuzzy matching is guarded twice: a text
// word that is a correctly spelled English word (from an embedded list of 275,000) never
// matches a different phrase word, whether through folding ("looser" is not "loser") or
// through the edit-distance-1 match that words of five letters or more get (score 0.8);
// and matching is by whole word, so "skill" never contains "kill". The dictionary is
// asked about a word as spelled once leetspeak and styles are undone ("l0ver" is
// "lover"); an inflection passes only if it is spelled as one ("rapper" collapses like
// "raper" but is not "rape"+"er"); and a capitalised word inside a sentence is taken
// for a name and never split ("Middlesex").
//
// The built-in concept matcher is lexical: a concept's content words are stemmed and
// expanded with an embedded synonym lexicon (data/lexicon.txt) for common moderation
// topics, and the score is the largest fraction of them found within 12 words. Reports
// say "(lexical match)" on such rules, because it is a much weaker judge than a model.
//
// # Cost
//
// Rule text is untrusted, so its cost is bounded when it compiles. Go's regexp matches
// in time proportional to the text times the program, so the REGEX programs of a text
// may hold 500 instructions together (Limits.MaxRegexInsts), about a second on a
// 256 KiB text at worst; an alternation of words belongs in ANY(=(...), ...), whose
// cost does not grow with the list. The edit-distance index, quadratic in a word, takes
// words of at most 64 runes. Evaluate checks its context between stages and between
// REGEX signals, so a deadline stops it.
package rules
