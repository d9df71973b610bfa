# Generates fuzzy_corpus.tsv (issue 20) with a fixed seed: python3 fuzzy_corpus_gen.py
# (run from anywhere; it writes next to itself). Review the TSV, not just this script.
import random, unicodedata
random.seed(20)
rows=[]  # family, phrase, text, expect
def add(fam, phrase, text, exp): rows.append((fam, phrase, text, exp))

words = ["idiot","kill","hate","loser","stupid","bitch","assault","shit","moron","dumb","slut","scum","trash","ugly","whore","fuck"]
multi = ["kill yourself","i hate you","you idiot","shut up","go die"]
carriers = ["you are such a {}", "{}", "what a {} lol", "ok {} whatever", "{} honestly", "listen {}, stop"]

INV = ["\u200b","\u200c","\u200d","\u00ad","\u2060","\u200e","\ufeff","\u180e","\u2062"]
def inv_insert(w, k):
    cs=list(w)
    pos=sorted(random.sample(range(1,len(cs)), min(k,len(cs)-1)))
    out=""
    for i,c in enumerate(cs):
        if i in pos: out+=random.choice(INV)
        out+=c
    return out
# family: invisible
for w in words+["kill yourself"]:
    for k in (1,2,99):
        t = " ".join(inv_insert(x,k) for x in w.split())
        add("invisible", w, random.choice(carriers).format(t), 1)
    # between every letter with same char, and VS16 after letters
    add("invisible", w, random.choice(carriers).format("\ufe0f".join(w)), 1)
    add("invisible", w, random.choice(carriers).format("\u00ad".join(w)), 1)

def mapalpha(w, base_lower, base_upper=None, upper=False, digits=None):
    out=""
    for c in w:
        if c.isalpha():
            if upper: out+=chr(base_upper+ord(c)-97)
            else: out+=chr(base_lower+ord(c)-97)
        else: out+=c
    return out
styles = {
 "math-bold": (0x1D41A, 0x1D400), "math-italic": (0x1D44E,0x1D434), "math-bold-script": (0x1D4EA,0x1D4D0),
 "fraktur-bold": (0x1D586,0x1D56C), "double-struck": (0x1D552,0x1D538), "sans-bold": (0x1D5EE,0x1D5D4),
 "monospace": (0x1D68A,0x1D670), "fullwidth": (0xFF41,0xFF21), "circled": (0x24D0,0x24B6),
 "parenthesized": (0x249C,None), "squared": (None,0x1F130), "neg-circled": (None,0x1F150),
 "neg-squared": (None,0x1F170), "regional": (None,0x1F1E6), "paren-capital": (None,0x1F110),
}
def styled(w, st):
    lo, up = styles[st]
    if st=="math-italic" and "h" in w:  # U+1D455 is reserved; italic h is U+210E
        pass
    out=""
    for c in w:
        if not c.isalpha(): out+=c; continue
        if lo is not None:
            cp = lo+ord(c)-97
            if st=="math-italic" and c=="h": cp=0x210E
            out+=chr(cp)
        else:
            out+=chr(up+ord(c)-97)
    return out
for w in words+multi:
    for st in styles:
        t = styled(w, st)
        if st in ("regional",) and random.random()<0.5:
            t = " ".join(t)  # spaced flags letters
        add("styled", w, random.choice(carriers).format(t), 1)

infl = {"idiot":["idiots","IDIOTS!!!","idiot's","Idiots"],"kill":["kills","killed","killing","killer"],
        "hate":["hates","hated","hating","hater","haters"],"loser":["losers","LOSERS","loser's"],
        "assault":["assaults","assaulted","assaulting"],"bitch":["bitches","bitched","bitching"],
        "moron":["morons"],"slut":["sluts"],"whore":["whores"],"stupid":[],"scum":["scums"],
        "fuck":["fucks","fucked","fucking","fucker","fuckers"],"stab":["stabbed","stabbing","stabs"],
        "rape":["raped","raping","rapes"],"troll":["trolls","trolled","trolling"],"punch":["punches","punched"],
        "spam":["spammer","spammed","spamming"],"bully":["bullies","bullied","bullying"],"die":["dies","died","dying"]}
for w, forms in infl.items():
    for f in forms:
        add("inflection", w, random.choice(carriers).format(f), 1)
add("inflection","assault","two assaults were reported",1)
add("inflection","ass","what asses",1)
add("inflection","idiot","IDIOTS!!!",1)

# mixed: leet + separators + invisible, styled + inflection, compounds, swaps, Damerau
leet = {"a":"4","e":"3","i":"1","o":"0","s":"5","t":"7"}
def leetify(w):
    return "".join(leet.get(c,c) if random.random()<0.6 else c for c in w)
for w in words:
    l = leetify(w)
    add("mixed", w, random.choice(carriers).format(".".join(l)), 1)
    add("mixed", w, random.choice(carriers).format(inv_insert(l,2)), 1)
    add("mixed", w, random.choice(carriers).format("\u200b".join(l).upper()), 1)
    add("mixed", w, random.choice(carriers).format(styled(w,"math-bold")+"s"), 1)
    add("mixed", w, random.choice(carriers).format(" ".join(w)), 1)
for w in ["idiot","loser","moron","bitch","slut","whore","trash"]:
    add("mixed", w, "you"+w, 1); add("mixed", w, "ur"+w, 1); add("mixed", w, "YOU"+w.upper()+"!!", 1)
    add("mixed", w, "u"+w, 1)
add("mixed","hate","ihate you",1); add("mixed","i hate you","ihateyou",1); add("mixed","hate","Ihate mondays",1)
add("mixed","i hate you","IHATEYOU!!!",1); add("mixed","kill yourself","killyourself",1); add("mixed","kill yourself","gokillyourself",1)
add("mixed","idiot","youareanidiot",1)
for w,sw in [("kill","klil"),("hate","htae"),("slut","sult"),("fuck","fcuk"),("dumb","dubm"),("shit","shti"),("scum","sucm"),("kill","ikll")]:
    add("mixed", w, random.choice(carriers).format(sw), 1)
for w,e in [("idiot","idoits"),("stupid","stuipd"),("stupid","stpuid"),("loser","losre"),("moron","mroon"),("assault","asasult"),("bitch","bicth"),("bitch","bicthes"),("idiot","idiiots"),("loser","l0sers")]:
    add("mixed", w, random.choice(carriers).format(e), 1)

# baseline families RULES.md already promised
for w in words:
    add("baseline", w, random.choice(carriers).format(leetify(w)), 1)
    add("baseline", w, random.choice(carriers).format("-".join(w)), 1)
    add("baseline", w, random.choice(carriers).format(w[0]+w[1]*4+w[1:]+w[-1]*3), 1)
    d = {"a":"á","e":"é","i":"í","o":"ö","u":"ü"}
    add("baseline", w, random.choice(carriers).format("".join(d.get(c,c) for c in w)), 1)
    cy = {"a":"а","e":"е","o":"о","c":"с","p":"р","x":"х","y":"у"}
    add("baseline", w, random.choice(carriers).format("".join(cy.get(c,c) for c in w)), 1)

# negatives
neg = [
 ("kill","that takes real skill"),("kill","her skills are great"),("kill","a skillful player"),("kill","the kiln is hot"),("kill","he wore a kilt"),
 ("kill","ski\u200bll matters"),("kill","𝐬𝐤𝐢𝐥𝐥 issue"),("kill","ⓢⓚⓘⓛⓛⓢ"),("kill","🇸🇰🇮🇱🇱"),
 ("ass","our class starts at nine"),("ass","the assassin was caught"),("ass","play the bass"),("ass","please pass the salt"),
 ("ass","we assess the damage"),("ass","the assessment is done"),("ass","a classy dinner"),("ass","the embassy is closed"),
 ("ass","the ambassador spoke"),("ass","cut the grass"),("ass","classes start monday"),("ass","cla\u00adss dismissed"),("ass","assassins creed"),
 ("ass","ａｓｓｅｓｓｍｅｎｔ"),("ass","passes"),
 ("rape","a bunch of grapes"),("rape","my therapist says hi"),("rape","the drapes are blue"),("rape","a good rapper"),
 ("rape","scrape the pan"),("rape","grape juice"),("rape","therapists agree"),("rape","rapeseed oil"),
 ("cunt","I live near Scunthorpe"),("cunt","SCUNTHORPE united"),("cunt","scunthorpe"),("cunt","count to ten"),("cunt","a small cult"),
 ("loser","my lover"),("loser","a looser fit"),("loser","come closer"),("loser","lovers lane"),("loser","do not lose it"),("loser","a poser"),
 ("shit","a shitake risotto"),("shit","shiitake mushrooms"),("shit","shift work"),("shit","a nice shirt"),("shit","whitish walls"),
 ("hate","a red hat"),("hate","the heat is on"),("hate","make haste"),("hate","whatever"),("hate","the chateau"),("hate","hats off"),("hate","ha te"),
 ("idiot","an idiom"),("idiot","idiosyncrasy"),("idiot","idioms"),
 ("stupid","in a stupor"),("stupid","cupid's arrow"),
 ("bitch","bitcoin price"),("bitch","a perfect pitch"),("bitch","birch trees"),("bitch","pitches"),
 ("assault","basalt rocks"),("assault","add salt"),("assault","asphalt road"),
 ("sex","I grew up in Middlesex"),("sex","She lives in Essex"),("sex","a string sextet"),("sex","the sexton rang"),("sex","unisex toilets"),
 ("cock","the cockpit"),("cock","a peacock"),("cock","Mr Hancock said"),("cock","Claud Cockburn wrote"),("cock","cocktail hour"),
 ("hell","hello there"),("hell","a sea shell"),("hell","Hellenic studies"),("hell","shellfish"),
 ("die","a healthy diet"),("die","indie music"),("die","he studied"),("die","soldier"),("die","audience"),
 ("dumb","dumbbell curls"),("dumb","dumbbells"),
 ("slut","a slot machine"),("slut","slate roof"),("slut","sleuth"),
 ("moron","oxymoron"),("moron","moroccan food"),("moron","oxymorons"),
 ("scum","scuba diving"),("scum","scum\u00adble"),
 ("whore","whose turn"),("whore","the shore"),("whore","whorl"),
 ("fuck","fuchsia dress"),("fuck","a good puck"),
 ("trash","thrash metal"),("trash","a trashcan"),
 ("ugly","snugly"),("ugly","smugly"),
 ("nazi","nazareth"),
 ("kys","keys"),("kys","sky"),
 ("hate","hated"[:0]+"chatted"),("kill","kilowatt"),("kill","Kilkenny"),
 ("idiot","you are smart"),("kill","I will visit you"),("hate","I love you"),
 ("kill","𝓈𝓀𝒾𝓁𝓁"),("ass","ⓒⓛⓐⓢⓢ"),("rape","🄶🅁🄰🄿🄴"),("shit","ｓｈｉｆｔ"),("loser","🅻🅾🆅🅴🆁"),
 ("kill","🇫🇷 and 🇮🇹 fans"),("ass","pass\u200bport"),("ass","glass\ufe0f"),
 ("stab","establish"),("stab","stable"),("stab","stabilize"),("punch","punchline"),("spam","spamalot"[:0]+"spa"),
 ("troll","trolley"),("troll","stroll"),("bully","bull"),("bully","bullet"),
 ("idiot","idle"),("hate","skate"),("hate","hater"[:0]+"water"),("kill","kills"[:0]+"kiwi"),
]
for ph, t in neg: add("negative", ph, t, 0)
clean = ["Thanks for the recipe, I will try it this weekend!", "The meeting moved to Thursday at three.",
 "Could you send me the assessment by Friday?", "Our class visited the museum and the embassy.",
 "She has the skills to pass the exam.", "I loved the grapes from the market.", "My therapist recommended more sleep.",
 "The killer whale is an apex predator of the ocean."[:0] + "The orca is an apex predator of the ocean.",
 "We watched the football match in Scunthorpe.", "Shiitake and shitake are the same mushroom.",
 "Please reassess the classification of these assets.", "The assassin bug is an insect.",
 "He is a great lover of classical music.", "The new hat looks lovely on you.", "Whatever happens, stay kind.",
 "I studied hard for the diet course.", "The bass player tuned his instrument.", "Hello, shell collectors!",
 "A skilled craftsman built the kiln.", "The cockpit of the plane was cramped.", "Count the coins twice.",
 "Come closer, the view is better here.", "The stable was painted red.", "Establish the facts first.",
 "Idioms make English hard to learn.", "The heat wave ended yesterday.", "Scuba divers saw a reef.",
 "The drapes match the carpet.", "Ｔｈｅ ｑｕｉｃｋ ｂｒｏｗｎ ｆｏｘ", "𝐆𝐨𝐨𝐝 𝐦𝐨𝐫𝐧𝐢𝐧𝐠 𝐞𝐯𝐞𝐫𝐲𝐨𝐧𝐞", "ⓗⓐⓥⓔ ⓐ ⓝⓘⓒⓔ ⓓⓐⓨ",
 "🇬🇧 vs 🇫🇷 tonight", "See you at the class\u200breunion", "The trolley rolled down the hill.",
 "A pitch-perfect performance.", "He bought bitcoin in 2017.", "Salt and pepper, please.",
 "The asphalt was still warm.", "That dumbbell is heavy.", "We took a stroll by the shore.",
 "The sextet played Brahms.", "Unisex toilets are on the left.", "The bullet train is fast.",
 "Their punchline landed well.", "An oxymoron is a figure of speech.", "Moroccan tea is sweet.",
 "The shift starts at six.", "Her shirt was whitish.", "She passed the class with honours.",
 "Glass\ufe0f bottles go in the green bin.", "The ambassador thanked the staff.", "Hellenic history is long.",
]
for ph in ["kill","ass","rape","cunt","loser","shit","hate","idiot","bitch","sex"]:
    for c in clean:
        add("clean", ph, c.encode().decode('unicode_escape') if '\\u' in c else c, 0)
# inflected innocent words (dictionary words whose collapsed form looks inflected)
for ph,t in [("ass","assess"),("ass","asset"),("rape","rapper"),("rape","rapier"),("kill","kilned"),("hate","hated"[:0]+"hatted"),("loser","looser"),("slut","sluts"[:0]+"slurs"),
             ("hell","heller"[:0]+"hellos"),("die","dieter"),("die","diesel"),("dumb","dumbo"),("scum","scummy"[:0]+"scums"[:0]+"scumble")]:
    add("negative", ph, t, 0)

with open(__import__("os").path.join(__import__("os").path.dirname(__file__) or ".", "fuzzy_corpus.tsv"),"w") as f:
    f.write("# Fuzzy matching corpus (issue 20): family, phrase, text, expected (1 match, 0 no match).\n")
    f.write("# Texts use \\uXXXX escapes for invisible characters; every other character is literal.\n")
    for fam, ph, t, e in rows:
        esc = "".join("\\u%04x" % ord(c) if (unicodedata.category(c)=="Cf" or 0xFE00<=ord(c)<=0xFE0F) else c for c in t)
        f.write(f"{fam}\t{ph}\t{esc}\t{e}\n")
import collections
print(collections.Counter((r[0],r[3]) for r in rows))
