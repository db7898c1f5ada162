"""Word lists the extractor reasons with (roles, family, recurrence, system nouns, moment words).

Kept apart from the rules so a reader sees the vocabulary in one place;
every list is closed-class or a small open class where a miss only costs
recall, never precision.
"""

from __future__ import annotations

import re

ROLE_NOUNS = (
    r"engineer|developer|dev|programmer|coder|designer|manager|lead|architect|scientist|analyst|researcher|sre|"
    r"devops|admin|sysadmin|administrator|dba|qa|tester|intern|contractor|consultant|freelancer|founder|"
    r"co-?founder|cto|ceo|cfo|coo|cpo|cmo|cio|chro|vp|director|head|owner|maintainer|student|teacher|professor|lecturer|"
    r"nurse|doctor|physician|lawyer|accountant|writer|editor|journalist|marketer|recruiter|coordinator|"
    r"specialist|officer|technician|pm|em|tpm|po|product owner|scrum master|postdoc|phd(?: student)?|"
    r"grad student|undergrad|ta|mentor|reviewer|hacker|hobbyist|tech lead|staff engineer|principal|swe|sde|"
    r"data scientist|ml engineer|statistician|economist|biologist|chemist|physicist|mathematician|"
    r"entrepreneur|solopreneur|indie hacker|maker|artist|photographer|musician|translator|support|"
    r"on-?call|point of contact|contact|go-to (?:person|guy|gal)|expert|specialist|owner|approver|"
    r"product manager|engineering manager|project manager|program manager|cofounder|partner|advisor|"
    r"instructor|trainer|coach|librarian|pharmacist|veterinarian|vet|dentist|therapist|paramedic|pilot|"
    r"teaching assistant|security engineer|pentester|auditor|secretary|assistant|receptionist|clerk|"
    r"architect|modeler|animator|illustrator|copywriter|strategist|operator|integrator|backend|frontend|"
    r"full-?stack|infra|platform|sales|marketing|ops|bookkeeper|landlord|landlady|supervisor|tutor|nanny|"
    r"paralegal|sponsor|steward|custodian|dpo|ciso|treasurer|chair|chairperson|president|producer|publisher|"
    r"commander|incident commander|liaison|representative|rep|facilitator|scribe|buddy|apprentice|mechanic|trainee|"
    r"chef|baker|barista|cashier|caretaker|handyman|(?:IT|office|tech) guy|(?:lettings|estate|real estate|travel|"
    r"insurance|support|booking) agent|broker|realtor|solicitor|barrister|columnist|reporter|"
    r"counsel|dba|release manager|release captain|gatekeeper|practice lead|squad lead|team lead|line manager|"
    # trades, care, services and the public sector (-ician and -ologist jobs by their ending)
    r"[a-z]+ician|[a-z]+ologist|[a-z]+iatrist|surveyor|plumber|carpenter|joiner|builder|bricklayer|plasterer|"
    r"decorator|roofer|tiler|glazier|scaffolder|locksmith|gardener|landscaper|welder|machinist|fitter|foreman|labou?rer|"
    r"courier|midwife|carer|caregiver|(?:social|youth|support|care|case) worker|caseworker|physio|physiotherapist|"
    r"radiographer|sonographer|surgeon|optometrist|counsell?or|dietitian|nutritionist|farmer|florist|butcher|"
    r"waiter|waitress|bartender|housekeeper|cleaner|janitor|security guard|firefighter|police officer|soldier|"
    r"hairdresser|barber|tailor|seamstress|jewell?er|sculptor|actor|actress|composer|filmmaker|videographer|"
    r"curator|archivist|historian|interpreter|actuary|banker|trader|underwriter|estimator|inspector|assessor|"
    r"controller|comptroller|buyer|merchandiser|planner|driver|investigator|detective|dean|executive|"
    r"registrar|notary|hygienist|gp|headteacher|head teacher|educator|pastor|priest|imam|rabbi|vicar|chaplain|"
    r"volunteer|organi[sz]er|fundraiser|campaigner|lobbyist|diplomat|civil servant|dispatcher|shopkeeper|"
    r"retailer|homemaker|housewife|househusband|retiree|pensioner|pupil|technologist|doula|pianist|violinist|"
    r"drummer|guitarist|novelist|typist|handler"
)
ROLE_RE = re.compile(rf"\b(?:{ROLE_NOUNS})s?\b", re.I)

FAMILY = (r"wife|husband|partner|spouse|girlfriend|boyfriend|fianc[ée]e?|kids?|children|child|son|sons|daughters?|boys|girls|"
          r"baby|toddler|twins|mom|mum|mother|dad|father|parents|brother|sister|siblings?|grandma|grandpa|"
          r"grandmother|grandfather|family|dog|dogs|cat|cats|puppy|kitten|pets?|parrot|rabbit|hamster|horse|newborn|"
          r"infant|grandkids|grandchildren|stepson|stepdaughter|retriever|labrador|lab|terrier|poodle|spaniel|"
          r"shepherd|collie|beagle|husky|corgi|pug|bulldog|dachshund|greyhound|whippet|tortoise|turtle|snake|lizard|goldfish")
COLLEAGUES = (r"manager|boss|lead|tech lead|team lead|teammate|team-?mate|colleague|coworker|co-worker|cofounder|"
              r"co-founder|report|direct report|pm|product manager|em|skip(?:-level)?|cto|ceo|designer|client|"
              r"mentor|mentee|intern|reviewer|pi|tl|architect|sre|qa|counterpart|buddy|pair|partner in crime|"
              r"business partner|co-?author|co-?maintainer|co-?(?:supervisor|organi[sz]er|chair|teacher)|"
              r"collaborator|lab-?mate|stakeholder|customer|contractor|freelancer|vp|director|head of \w+")

# medicines, by the endings of their generic names and the few said by another name ("I'm on warfarin")
MEDICATIONS = (r"[a-z]{3,}(?:statin|pril|sartan|olol|azole|cillin|mycin|cycline|oxetine|azepam|zolam|triptan|gliptin|"
               r"formin|thyroxine|farin|semide|thiazide|dipine|xaban|gatran|profen|triptyline)|insulin|aspirin|"
               r"paracetamol|acetaminophen|melatonin|lithium|prednisone|prednisolone|methotrexate|sertraline|citalopram|"
               r"venlafaxine|bupropion|gabapentin|pregabalin|adderall|ritalin|vyvanse|ozempic|wegovy|mounjaro|"
               r"antidepressants|antihistamines|blood thinners|beta[- ]blockers|the pill|hrt|meds|medication")
DAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekday|weekend|mon|tue|tues|wed|thu|thurs|fri|sat|sun"
MONTHS = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
RECURRENCE_RE = re.compile(
    rf"\b(?:(?:every|each)\s+(?:other\s+|single\s+|second\s+|third\s+|\d+(?:st|nd|rd|th)?\s+)?"
    rf"(?:day|morning|afternoon|evening|night|week|month|quarter|year|sprint|release|cycle|iteration|"
    rf"(?:{DAYS})s?|hour|\d+\s+(?:days|weeks|months|hours|minutes)|few\s+\w+|couple\s+of\s+\w+|"
    rf"(?:{MONTHS})|first|last|business day|working day|two weeks|other week)|"
    rf"(?:daily|weekly|bi-?weekly|fortnightly|monthly|bi-?monthly|quarterly|yearly|annually|nightly|hourly)"
    rf"(?!\s+(?:active\s+)?(?:users|visitors|requests|actives?|traffic|volume|revenue|limits?|quotas?|budgets?|caps?|"
    rf"spend|cost|costs|signups|orders|uploads|sales|figures|numbers|totals)\b)|"
    rf"(?:on|the)\s+(?:(?:{DAYS})s|weekdays|weekends)|(?:{DAYS})s\s+(?:and|&)\s+(?:{DAYS})s|"
    rf"(?:{DAYS})(?:\s+(?:and|&|or)\s+(?:{DAYS}))?\s+(?:mornings|afternoons|evenings|nights|lunchtimes)|"
    rf"once\s+a\s+(?:day|week|month|quarter|year|sprint)|twice\s+a\s+(?:day|week|month|year)|"
    rf"(?:\w+\s+)?times\s+a\s+(?:day|week|month|year)|per\s+(?:day|week|month|sprint|quarter)|"
    rf"(?:mon|tue|wed|thu|fri)(?:day)?\s*[-–]\s*(?:fri|sat|sun)(?:day)?|end of (?:each|every|the) (?:month|quarter|sprint)|"
    rf"each year|every year|on the first|on the last)\b",
    re.I,
)
EVENT_NOUNS = (r"stand-?up|standups|sync|meeting|retro|retrospective|planning|grooming|refinement|demo|review|"
               r"1:1|one-on-one|1-on-1|all-hands|town hall|release|deploy|deploys|deployment|freeze|code freeze|"
               r"on-?call|rotation|backup|backups|cron|job|sprint|office hours|check-in|checkin|offsite|"
               r"maintenance window|patch tuesday|cutoff|cut-off|deadline|payroll|invoice|report|newsletter|"
               r"triage|bug bash|hackathon|lunch|class|practice|session|shift|handover|gym|school run")
CLOCK_RE = re.compile(r"\b(?:at\s+)?\d{1,2}(?::\d{2})\s*(?:am|pm|[ap]\.m\.)?|\b\d{1,2}\s*(?:am|pm|[ap]\.m\.)|"
                      r"\bnoon\b|\bmidnight\b", re.I)
EVENT_RE = re.compile(rf"\b(?:{EVENT_NOUNS})s?\b", re.I)

THINGS = (r"service|services|app|application|api|apis|project|repo|repository|monorepo|website|site|backend|"
          r"frontend|front-end|back-end|pipeline|cluster|platform|tool|library|lib|cli|bot|database|db|server|"
          r"servers|system|job|jobs|worker|workers|bucket|queue|stack|product|gateway|proxy|cache|cdn|infra|"
          r"infrastructure|deployment|deploys|build|builds|ci|cd|tests?|test suite|suite|docs|documentation|"
          r"branch|branches|staging|prod|production|dev|environment|env|envs|cron|schema|migrations?|endpoint|"
          r"endpoints|webhook|webhooks|microservice|microservices|module|package|sdk|dashboard|admin|portal|"
          r"mobile app|ios app|android app|codebase|code|config|secrets|vault|logs|logging|monitoring|alerts|"
          r"alerting|metrics|auth|authentication|login|sso|billing|payments|search|index|storage|warehouse|"
          r"data warehouse|lake|etl|model|models|vm|vms|container|containers|image|images|domain|dns|"
          r"certificate|certs|vpn|network|firewall|load balancer|lb|region|account|org|tenant|instance|"
          r"instances|node|nodes|pod|pods|namespace|helm chart|chart|terraform|infra repo|mono-repo|plugin|"
          r"extension|widget|component|components|ui|ux|design system|style guide|linter|formatter|"
          r"pre-commit|hook|hooks|release|releases|version|versions|license|readme|wiki|runbook|sla|slo|"
          r"rate limit|quota|budget|timeout|retention|backup|backups|replica|replicas|shard|shards|topic|"
          r"topics|stream|streams|table|tables|column|columns|folder|directory|file|files|script|scripts|"
          r"makefile|dockerfile|compose file|workflow|workflows|action|actions|runner|runners|stage|stages|"
          r"scheduler|orchestrator|broker|bus|event bus|feature flags?|flags|toggle|experiments|analytics|"
          r"crm|erp|cms|blog|shop|store|newsletter|firmware|device|devices|robot|printer|laptop|machine|"
          r"machines|box|homelab|nas|router|pi|raspberry pi|kernel|os|distro|shell|terminal|editor|ide|provider|vendor")
THING_RE = re.compile(rf"\b(?:{THINGS})\b", re.I)

# Words that start a clause with a capital but never name a person or a product.
# the products and languages that are written capitalised but are no one's name
PRODUCTS = frozenset("""
github gitlab bitbucket jira linear slack discord notion confluence google microsoft amazon apple meta
aws gcp azure docker kubernetes k8s linux windows macos mac ios android python java javascript typescript go rust
ruby php kotlin swift scala elixir haskell node react vue angular svelte django flask fastapi rails spring
postgres postgresql mysql sqlite redis mongodb mongo kafka rabbitmq elasticsearch terraform ansible helm nginx
vim neovim emacs vscode intellij pycharm zsh bash fish tmux git ci cd api ui ux sql json yaml toml
excel sheets figma jupyter duckdb tableau airtable obsidian
""".split())
# nationalities and peoples a person says they are ("I'm Kenyan"): where they are from, not their name
DEMONYMS = frozenset("""
afghan albanian algerian american andorran angolan argentine argentinian armenian australian austrian azerbaijani
bahraini bangladeshi barbadian belarusian belgian belizean beninese bolivian bosnian brazilian british bulgarian
burmese burundian cambodian cameroonian canadian chadian chilean chinese colombian congolese croatian cuban cypriot
czech danish dominican dutch ecuadorian egyptian emirati english eritrean estonian ethiopian fijian filipino filipina
finnish french gabonese gambian georgian german ghanaian greek grenadian guatemalan guinean guyanese haitian
honduran hungarian icelandic indian indonesian iranian iraqi irish israeli italian ivorian jamaican japanese
jordanian kazakh kenyan korean kosovar kuwaiti kyrgyz lao latvian lebanese liberian libyan lithuanian luxembourgish
malagasy malawian malaysian maldivian malian maltese mauritian mexican moldovan mongolian montenegrin moroccan
mozambican namibian nepali nepalese nicaraguan nigerian nigerien norwegian omani pakistani palestinian panamanian
paraguayan persian peruvian polish portuguese qatari romanian russian rwandan salvadoran samoan saudi scottish
senegalese serbian singaporean slovak slovenian somali sudanese spanish swazi swedish swiss
syrian taiwanese tajik tanzanian thai togolese tongan trinidadian tunisian turkish turkmen ugandan ukrainian
uruguayan uzbek venezuelan vietnamese welsh yemeni zambian zimbabwean kiwi aussie brit yoruba igbo hausa zulu xhosa
maori māori punjabi tamil bengali gujarati catalan basque kurdish berber
""".split())
COMMON_CAPS = frozenset("""
a an the this that these those there here it its it's i i'm we we're you you're he she they my our your his her their
what which who whom whose when where why how if then else so but and or nor yet also just only still even maybe
perhaps please thanks thank ok okay yes no not never always sometimes often usually generally basically actually
hi hello hey sure great good nice cool fine well oh ah hmm lol haha yeah yep nope right wait sorry
everyone everybody someone somebody anyone anybody nobody each every all both either neither some any most many
few several much more less other another same such one two three four five six seven eight nine ten first second
last next new old current main whole entire big small quick short long let let's lets make use run add remove fix
check try see look go keep stop start do don't does doesn't did didn't can can't could would should must will
won't shall may might need needs want wants is are was were be been being am has have had having get got
today tomorrow yesterday tonight now later soon before after since until while during
from to in on at for with about by as of into onto over under via without
monday tuesday wednesday thursday friday saturday sunday january february march april june july august september
october november december team teams staging prod production dev main master develop trunk release
note update todo
muslim christian jewish hindu buddhist sikh catholic atheist vegan vegetarian
""".split()) | PRODUCTS
PERSON_VERBS = (
    r"owns|own|co-?owns|leads|lead|manages|manage|runs the|handles|handle|maintains|maintain|decides|decide|"
    r"approves|approve|signs off(?: on)?|sign off(?: on)?|reviews|review|is in charge of|are in charge of|"
    r"is responsible for|are responsible for|takes care of|take care of|looks after|look after|knows|know|"
    r"built|wrote|designed|set up|sets up|set|sets|reports to|report to|works on|work on|is on the|are on the|"
    r"is on our|joined|left|covers|cover|is our|are our|is my|are my|is the|are the|is a|is an|prefers|likes|hates|"
    r"wants|needs|is (?:our|the|my) (?:go-to|point of contact)|does|do|schedules|organizes|organises|"
    r"is based in|lives in|works from|works at|works in|sits in|is out|speaks|is from|handles all|"
    r"drives|champions|will own|will lead|took over|has taken over|is taking over|is now|is also|"
    r"is|are|has|have|should be|gets|must approve|needs to approve|has to approve|signs|merges|deploys|"
    r"releases|cuts|assigns|triages|writes|writes the|pays|hired|onboarded|mentors|coordinates"
)
