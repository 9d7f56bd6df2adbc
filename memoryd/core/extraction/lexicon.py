"""Word lists the extraction rules consult: what counts as a place, a pet, a tool.

Kept apart from the rules so that growing a list (a user-visible miss) never touches a
pattern. Every list is lower-case; multi-word entries are matched as phrases.
"""

from __future__ import annotations

# -- technology: the category decides the slot, so "I prefer JavaScript now" replaces
# "I prefer TypeScript" (one preferred language) while "I use X" adds.
TECH: dict[str, str] = {}


def _add(category: str, words: str) -> None:
    for word in words.split(","):
        TECH[word.strip()] = category


_add(
    "language",
    "python,javascript,typescript,java,kotlin,swift,rust,go,golang,c,c++,c#,ruby,php,"
    "scala,elixir,erlang,haskell,clojure,dart,lua,perl,r,julia,matlab,fortran,cobol,"
    "ocaml,f#,zig,nim,crystal,objective-c,bash,powershell,sql,solidity,groovy,"
    "visual basic,vb.net,assembly,lisp,common lisp,scheme,racket,elm,purescript,"
    "coffeescript,delphi,pascal,prolog,apex,abap,vba,gdscript,hcl,nix,mojo,odin,gleam,v",
)
_add(
    "framework",
    "react,react native,vue,vue.js,angular,svelte,sveltekit,next.js,nextjs,nuxt,remix,"
    "astro,solid,solidjs,ember,jquery,django,flask,fastapi,rails,ruby on rails,laravel,"
    "symfony,spring,spring boot,express,express.js,nestjs,koa,hapi,gin,echo,fiber,"
    "phoenix,asp.net,.net,dotnet,blazor,flutter,swiftui,uikit,jetpack compose,electron,"
    "tauri,qt,gtk,unity,unreal,unreal engine,godot,tailwind,tailwindcss,bootstrap,"
    "material ui,mui,chakra,redux,pandas,numpy,pytorch,tensorflow,keras,jax,"
    "scikit-learn,sklearn,langchain,llamaindex,htmx,alpine.js,deno,bun,node,node.js,"
    "nodejs,vite,webpack,storybook,jest,pytest,playwright,cypress,selenium,graphql,"
    "trpc,prisma,sqlalchemy,hibernate,streamlit,gradio,dbt,airflow,spark,hadoop,kafka",
)
_add(
    "database",
    "postgres,postgresql,mysql,mariadb,sqlite,mongodb,mongo,redis,cassandra,dynamodb,"
    "firestore,firebase,supabase,couchdb,neo4j,elasticsearch,opensearch,clickhouse,"
    "snowflake,bigquery,redshift,duckdb,cockroachdb,oracle,sql server,mssql,planetscale,"
    "neon,timescaledb,influxdb,pinecone,qdrant,weaviate,milvus,chroma,pgvector,"
    "memcached,couchbase,realm,fauna,surrealdb",
)
_add(
    "editor",
    "jetbrains,kakoune,micro,textmate,bbedit,nova,lapce,vim,neovim,nvim,emacs,vs code,"
    "vscode,visual studio code,visual studio,intellij,"
    "intellij idea,pycharm,webstorm,goland,rider,clion,phpstorm,android studio,xcode,"
    "sublime,sublime text,atom,nano,helix,zed,cursor,eclipse,netbeans,notepad++,"
    "jupyter,rstudio,spacemacs,doom emacs,kate,brackets,fleet,windsurf",
)
_add(
    "os",
    "linux,ubuntu,debian,fedora,arch,arch linux,manjaro,mint,linux mint,pop!_os,pop os,"
    "nixos,gentoo,opensuse,centos,rhel,red hat,alpine,kali,elementary os,endeavouros,"
    "windows,windows 10,windows 11,wsl,wsl2,macos,mac os,os x,osx,a mac,mac,freebsd,"
    "openbsd,chromeos,chrome os,ios,android",
)
_add(
    "cloud",
    "aws,amazon web services,gcp,google cloud,azure,digitalocean,digital ocean,heroku,"
    "vercel,netlify,cloudflare,fly.io,render,linode,hetzner,ovh,oracle cloud,railway,"
    "kubernetes,k8s,docker,terraform,ansible,pulumi,lambda,ec2,s3,cloud run,openshift,"
    "nomad,podman,github actions,gitlab,gitlab ci,jenkins,circleci,github,bitbucket",
)
_add(
    "hardware",
    "macbook,macbook pro,macbook air,mac mini,mac studio,imac,thinkpad,xps,dell xps,"
    "framework laptop,surface,surface pro,chromebook,raspberry pi,arduino,iphone,ipad,"
    "pixel,galaxy,steam deck,mechanical keyboard,ergodox,nvidia,rtx,gpu,m1,m2,m3,m4",
)
_add(
    "tool",
    "git,jira,notion,obsidian,figma,slack,trello,asana,linear,confluence,excel,"
    "google sheets,tableau,power bi,postman,zsh,fish,oh my zsh,tmux,iterm,iterm2,"
    "warp,alacritty,kitty,wezterm,homebrew,chatgpt,copilot,github copilot,claude,"
    "photoshop,illustrator,blender,lightroom,premiere,final cut,davinci resolve,"
    "ableton,logic pro,fl studio,autocad,solidworks,fusion 360,sketchup,canva,ollama,"
    "lm studio,proxmox,truenas,unraid,home assistant,pfsense,opnsense,synology,"
    "gdscript,quarkus,micronaut,ktor,vapor,actix,axum,rocket,tokio,bevy,pygame,"
    "stm32,esp32,arduino,raspberry pi,fpga,verilog,vhdl,kicad,"
    "wordpress,shopify,webflow,zapier,salesforce,hubspot,sap,anki,todoist,evernote",
)

#: Slots of which a person has one at a time: a new value replaces the old one.
SINGLE_TECH = frozenset({"editor", "os"})

LANGUAGES = frozenset(
    "twi,ga,ewe,akan,yoruba,igbo,hausa,swahili,zulu,xhosa,afrikaans,amharic,somali,maori,"
    "māori,te reo,te reo māori,samoan,tongan,fijian,tagalog,filipino,cebuano,ilocano,"
    "javanese,sundanese,indonesian,malay,bahasa,thai,lao,khmer,burmese,vietnamese,"
    "irish,gaelic,scottish gaelic,welsh,breton,basque,catalan,galician,"
    "english,spanish,french,german,italian,portuguese,dutch,swedish,norwegian,danish,"
    "finnish,icelandic,polish,czech,slovak,hungarian,romanian,bulgarian,greek,turkish,"
    "russian,ukrainian,belarusian,serbian,croatian,bosnian,slovenian,macedonian,"
    "albanian,lithuanian,latvian,estonian,georgian,armenian,azerbaijani,kazakh,uzbek,"
    "arabic,hebrew,persian,farsi,urdu,hindi,bengali,bangla,punjabi,gujarati,marathi,"
    "tamil,telugu,kannada,malayalam,sinhala,nepali,mandarin,cantonese,chinese,japanese,"
    "korean,vietnamese,thai,lao,khmer,burmese,indonesian,malay,tagalog,filipino,"
    "swahili,amharic,yoruba,igbo,hausa,zulu,xhosa,afrikaans,somali,catalan,basque,"
    "galician,welsh,irish,gaelic,scottish gaelic,latin,esperanto,sign language,asl,bsl,"
    "quechua,maori,hawaiian,yiddish,pashto,kurdish,mongolian,tibetan,luxembourgish,"
    "maltese,portuguese (brazilian),brazilian portuguese,klingon,malayalam,kinyarwanda,"
    "lingala,tulu,konkani,sesotho,setswana,tswana,auslan,lsf,libras,wolof,pulaar,fula,"
    "fulani,assamese,odia,oriya,sindhi,kashmiri,cebuano,ilocano,hiligaynon,waray,"
    "tigrinya,oromo,kirundi,shona,ndebele,chichewa,luganda,twi,ewe,fon,bambara,"
    "malagasy,berber,tamazight,amazigh,kabyle,darija,levantine arabic,egyptian arabic,"
    "hokkien,teochew,hakka,shanghainese,taiwanese,tok pisin,bislama,samoan,tongan,fijian,"
    "dari,tajik,turkmen,kyrgyz,uyghur,tatar,bashkir,chechen,ossetian,sorani,kurmanji,"
    "faroese,frisian,breton,cornish,manx,romani,ladino,aramaic,sanskrit,pali,"
    "ancient greek,old english,irish gaelic,nepalese,bhojpuri,maithili,rajasthani,"
    "haryanvi,dogri,santali,manipuri,meitei,mizo,khasi,garo,sylheti,chittagonian,"
    "rohingya,karen,shan,mon,hmong,javanese,sundanese,balinese,minangkabau,acehnese,"
    "bugis,tetum,chamorro,ukrainian sign language,british sign language,"
    "american sign language,french sign language,swiss german,austrian german,"
    "quebecois,creole,haitian creole,patois,papiamento,guarani,aymara,nahuatl,mayan,"
    "k'iche',zapotec,mixtec,otomi,mapudungun,inuktitut,cree,ojibwe,navajo,lakota,"
    "cherokee,hawaiian pidgin".split(",")
)

PETS: dict[str, str] = {}
for _kind, _words in {
    "dog": "dog,dogs,puppy,pup,doggo,labrador,lab,golden retriever,retriever,poodle,"
    "beagle,husky,german shepherd,dachshund,terrier,bulldog,french bulldog,frenchie,pug,"
    "chihuahua,border collie,collie,shih tzu,corgi,greyhound,whippet,boxer,rottweiler,"
    "doberman,spaniel,cocker spaniel,schnauzer,pomeranian,shiba,shiba inu,akita,"
    "maltese,yorkie,samoyed,great dane,mastiff,pit bull,pitbull,labradoodle,goldendoodle,"
    "cavapoo,sheepdog,malinois,vizsla,weimaraner,basset hound,bernese,newfoundland,"
    "lurcher,staffy,staffie,jack russell,springer,springer spaniel,setter,pointer,"
    "mutt,shepherd,cattle dog,heeler,kelpie,collie mix,lab mix,saluki,podenco,"
    "galgo,havanese,bichon,cavalier,cavalier king charles,shih-tzu,lhasa apso,"
    "bloodhound,dalmatian,sheltie,aussie,australian shepherd,bernedoodle,poodle mix,"
    "mini schnauzer,boston terrier,westie,scottie,cockapoo,maltipoo,puggle,borzoi",
    "cat": "cat,cats,kitten,kitty,maine coon,siamese,tabby,persian cat,ragdoll,sphynx,"
    "bengal,british shorthair,russian blue,calico,tuxedo cat,moggy,norwegian forest cat,"
    "abyssinian,scottish fold,devon rex,burmese,tortie,tortoiseshell",
    "bird": "bird,birds,parrot,budgie,parakeet,cockatiel,canary,macaw,cockatoo,"
    "lovebird,finch,african grey,conure,quaker parrot,pigeons,doves",
    "rabbit": "rabbit,rabbits,bunny,bunnies",
    "hamster": "hamster,hamsters",
    "guinea pig": "guinea pig,guinea pigs",
    "fish": "fish,goldfish,betta,betta fish,aquarium",
    "turtle": "turtle,tortoise,box turtle,red-eared slider,terrapin",
    "reptile": "snake,python snake,lizard,gecko,leopard gecko,bearded dragon,iguana,"
    "chameleon,axolotl",
    "horse": "horse,pony,mare",
    "ferret": "ferret",
    "rodent": "rat,rats,mouse,mice,chinchilla,gerbil,degu",
    "hedgehog": "hedgehog",
    "chicken": "chicken,chickens,hens",
    "goat": "goat,goats",
    "pig": "pig,mini pig",
    "other": "tarantula,hermit crab,hermit crabs,snail,bees,beehive,alpaca,llama,sheep,"
    "cow,donkey,duck,ducks,geese,quail,rat terrier,sugar glider,pet",
}.items():
    for _word in _words.split(","):
        PETS[_word.strip()] = _kind

#: Who the user lives their life with: one slot, however they call them.
PARTNERS = frozenset(
    "wife,husband,partner,spouse,girlfriend,boyfriend,fiance,fiancee,fiancé,fiancée".split(",")
)
#: Relations that name one person at a time (a new one replaces the old).
SINGLE_RELATIONS = frozenset(
    "wife,husband,partner,spouse,girlfriend,boyfriend,fiance,fiancee,fiancé,fiancée,"
    "mom,mum,mother,dad,father,stepmom,stepdad,stepmother,stepfather,"
    "mother-in-law,father-in-law".split(",")
)
RELATIONS = SINGLE_RELATIONS | frozenset(
    "son,daughter,kid,kids,child,children,baby,toddler,boy,girl,twins,"
    "parents,brother,sister,sibling,siblings,twin,twin brother,twin sister,"
    "older brother,younger brother,older sister,younger sister,little brother,"
    "little sister,big brother,big sister,half-brother,half-sister,stepson,"
    "stepdaughter,stepbrother,stepsister,grandma,grandmother,grandpa,grandfather,"
    "grandparents,granddaughter,grandson,grandkids,grandchildren,aunt,uncle,cousin,"
    "niece,nephew,best friend,roommate,flatmate,in-laws,brother-in-law,sister-in-law,"
    "oldest,youngest,eldest,firstborn,cousins,nephews,nieces,sons,daughters,brothers,"
    "sisters,family,partner's family,wife's family,husband's family,ex,ex-wife,"
    "ex-husband,ex-partner,godson,goddaughter,godmother,godfather,housemate".split(",")
)

CONDITIONS = (
    "diabetes,type 1 diabetes,type 2 diabetes,asthma,adhd,add,autism,anxiety,depression,"
    "migraine,migraines,arthritis,rheumatoid arthritis,hypertension,high blood pressure,"
    "low blood pressure,high cholesterol,celiac,coeliac,celiac disease,coeliac disease,"
    "ibs,crohn,crohn's,colitis,epilepsy,eczema,psoriasis,insomnia,sleep apnea,pcos,"
    "endometriosis,long covid,cancer,lupus,fibromyalgia,chronic fatigue,gerd,acid reflux,"
    "reflux,tinnitus,dyslexia,dyscalculia,ptsd,ocd,bipolar,bipolar disorder,"
    "hypothyroidism,hyperthyroidism,hashimoto,hashimoto's,anemia,scoliosis,"
    "multiple sclerosis,ms,parkinson,parkinson's,back pain,chronic pain,bad back,"
    "bad knee,bad knees,knee injury,a herniated disc,herniated disc,gout,glaucoma,"
    "color blindness,colour blindness,heart condition,heart disease,pots,vertigo,"
    "hearing loss,kidney disease,a pacemaker,pacemaker,prediabetes,pre-diabetes,"
    "osteoporosis,tendonitis,carpal tunnel,rsi,sciatica,allergies,hay fever,"
    "a peanut allergy,food allergies,a chronic illness,chronic illness,a disability,"
    "keratoconus,graves,graves' disease,hashimoto's thyroiditis,meniscus,meniscus tear,"
    "acl tear,rotator cuff,tennis elbow,frozen shoulder,slipped disc,whiplash,"
    "sciatica,shin splints,stress fracture,asthma attacks,allergic asthma,"
    "hyperhidrosis,rosacea,acne,vitiligo,alopecia,hidradenitis,interstitial cystitis,"
    "endometrioma,fibroids,pcod,menopause,perimenopause,infertility,ivf,"
    "crohn's disease,ulcerative colitis,sickle cell disease,thalassemia,"
    "myasthenia gravis,als,huntington's,dementia,alzheimer's,glaucoma,cataracts,"
    "macular degeneration,hearing impairment,deafness,blindness,aphasia,stutter,"
    "a stutter,tourette's,tourettes,dyspraxia,cptsd,eating disorder,anorexia,bulimia,"
    "binge eating disorder,arfid,long covid,post-covid,hypertension,"
    "cerebral palsy,down syndrome,sickle cell,hemophilia,cystic fibrosis,hiv,"
    "hepatitis,a heart murmur,plantar fasciitis,a torn acl,torn acl,transplant,"
    "kidney transplant,liver transplant,surgery,stroke,a stroke,heart attack,"
    "a heart attack,concussion,c-section,mastectomy,chemo,chemotherapy,a hip replacement,"
    "knee replacement,hip replacement,a knee replacement,gallbladder removed,"
    "appendectomy,bypass,stent,an autoimmune disease,autoimmune disease,"
    "generalized anxiety disorder,panic attacks,panic disorder,social anxiety,"
    "seasonal depression,sad,bpd,cptsd,adhd-pi,narcolepsy,restless legs,"
    "a chronic condition,diverticulitis,gastritis,ulcer,an ulcer,kidney stones,"
    "gallstones,shingles,a hernia,hernia,chronic migraines,cluster headaches,"
    "long-term covid,me/cfs,ehlers-danlos,eds,raynaud's,raynaud,type one diabetes,"
    "t1d,t2d,hearing aids,a cochlear implant,glasses,contacts,low vision"
).split(",")

HEALTH_STATES = frozenset(
    "diabetic,prediabetic,asthmatic,epileptic,colorblind,colourblind,color blind,"
    "colour blind,deaf,hard of hearing,blind,visually impaired,partially sighted,"
    "pregnant,dyslexic,autistic,anemic,anaemic,hypoglycemic,immunocompromised,"
    "on the spectrum,in recovery,neurodivergent,disabled,in a wheelchair,a wheelchair user,"
    "an insulin user,on dialysis,recovering from surgery,sober,celiac,coeliac".split(",")
)

DIETS = frozenset(
    "vegetarian,vegan,pescatarian,pescetarian,flexitarian,plant-based,plant based,keto,"
    "paleo,carnivore,raw vegan,fruitarian,whole30,low-carb,low carb,low-fat,low fat,"
    "low-sodium,low sodium,low-fodmap,low fodmap,gluten-free,gluten free,dairy-free,"
    "dairy free,lactose-free,sugar-free,sugar free,halal,kosher,teetotal,a teetotaler,"
    "teetotaler,intermittent fasting,mediterranean,atkins,diabetic diet,pollotarian,"
    "macrobiotic,sattvic,jain,lacto-vegetarian,lacto vegetarian,ovo-vegetarian,"
    "lacto-ovo vegetarian,eggetarian,omad,one meal a day,carb cycling,low-histamine,"
    "low histamine,anti-inflammatory,slimming world,weight watchers,dash diet,zone diet,"
    "nordic diet,specific carbohydrate diet,gaps diet,aip,low-gi,high-protein,"
    "high protein,nut-free,egg-free,soy-free,sugar-free,alcohol-free,caffeine-free,"
    "sober,alcohol free,pure vegetarian,strict vegetarian,strict vegan".split(",")
)

#: A diet one follows (one at a time) rather than a restriction one adds.
MAIN_DIETS = frozenset(
    "vegetarian,vegan,pescatarian,pescetarian,flexitarian,plant-based,plant based,keto,"
    "paleo,carnivore,raw vegan,fruitarian,whole30,atkins,mediterranean,pollotarian,"
    "macrobiotic,sattvic,lacto-vegetarian,lacto vegetarian,ovo-vegetarian,"
    "lacto-ovo vegetarian,eggetarian,pure vegetarian,strict vegetarian,strict vegan".split(",")
)

POSSESSIONS: dict[str, str] = {}
for _kind, _words in {
    "vehicle": "car,truck,pickup,van,minivan,suv,jeep,tesla,model 3,model y,model s,prius,"
    "civic,corolla,camry,golf,polo,mini,mini cooper,fiat,beetle,ev,electric car,"
    "hybrid,motorcycle,motorbike,scooter,vespa,moped,rv,camper,campervan,subaru,"
    "toyota,honda,bmw,audi,mercedes,volkswagen,vw,ford,mazda,kia,hyundai,volvo,"
    "nissan,chevy,chevrolet,porsche,jaguar,peugeot,renault,skoda,seat,dacia,lexus,"
    "rivian,polestar,byd,land rover,range rover,harley,ducati,yamaha,kawasaki,ute,hatchback,"
    "sedan,station wagon,4wd,4x4,maruti,maruti swift,swift,nexon,nexon ev,tata,mahindra,"
    "suzuki,ranger,ford ranger,fiesta,focus,mustang,hilux,navara,mitsubishi,opel,citroen,"
    "isuzu,holden,commodore,rav4,cr-v,outback,forester,yaris,jazz,clio,octavia,i10,i20,"
    "creta,alto,innova,scorpio,thar,ioniq,leaf,model 3",
    "bike": "bike,bicycle,e-bike,ebike,road bike,mountain bike,gravel bike,fixie,"
    "cargo bike,brompton,peloton",
    "laptop": "laptop,macbook,macbook pro,macbook air,thinkpad,xps,chromebook,"
    "surface laptop,notebook,gaming laptop,framework laptop,lenovo,ideapad,yoga laptop,"
    "elitebook,hp laptop,dell laptop,dell,asus,zenbook,vivobook,acer,lg gram,gram laptop,"
    "positivo,surface pro",
    "computer": "pc,desktop,gaming pc,computer,imac,mac mini,mac studio,workstation",
    "phone": "phone,iphone,smartphone,android phone,pixel,galaxy,oneplus,xiaomi,"
    "samsung,samsung galaxy,fairphone,nokia,blackberry",
    "tablet": "tablet,ipad,kindle,e-reader,remarkable",
    "home": "house,home,apartment,flat,condo,studio,cabin,cottage,townhouse,bungalow,"
    "villa,loft,duplex,farmhouse,houseboat,tiny house,place",
    "instrument": "piano,keyboard piano,guitar,electric guitar,acoustic guitar,bass,"
    "violin,cello,drum kit,drums,ukulele,saxophone,trumpet,flute,synth,synthesizer",
    "console": "ps5,ps4,playstation,xbox,nintendo switch,switch,steam deck,wii",
    "camera": "camera,dslr,mirrorless camera,gopro,drone,leica,fujifilm,canon,nikon",
    "boat": "boat,sailboat,kayak,canoe,yacht,paddleboard",
    "watch": "watch,smartwatch,apple watch,garmin,fitbit,oura ring",
    "garden": "garden,backyard,allotment,balcony garden,greenhouse",
    "printer": "3d printer,printer",
}.items():
    for _word in _words.split(","):
        POSSESSIONS[_word.strip()] = _kind

#: Possessions a person usually has one of: a new one replaces the old.
SINGLE_POSSESSIONS = frozenset({"vehicle", "laptop", "computer", "phone", "home"})

#: Endings and words that make "I'm a/an X" an occupation.
OCCUPATION_SUFFIXES = ("er", "or", "ist", "ian", "ant", "ent", "eer", "ary", "ive", "ect")
OCCUPATIONS = frozenset(
    "sales rep,rep,pharma rep,sales representative,hygienist,dental hygienist,paramedic,"
    "paralegal,lawyer,solicitor,barrister,cashier,barista,bank teller,teller,".split(",")
) | frozenset(
    "engineer,developer,programmer,designer,nurse,doctor,physician,surgeon,dentist,"
    "teacher,professor,lecturer,student,researcher,scientist,analyst,consultant,"
    "manager,lead,director,founder,co-founder,cofounder,ceo,cto,cfo,coo,vp,intern,"
    "lawyer,attorney,paralegal,accountant,architect,chef,cook,baker,barista,"
    "bartender,waiter,waitress,cashier,pharmacist,therapist,psychologist,psychiatrist,"
    "paramedic,firefighter,police officer,officer,soldier,pilot,flight attendant,"
    "electrician,plumber,carpenter,mechanic,technician,farmer,gardener,librarian,"
    "journalist,editor,writer,author,novelist,poet,artist,painter,illustrator,"
    "photographer,musician,composer,singer,actor,actress,dancer,model,vet,"
    "veterinarian,midwife,caregiver,carer,nanny,tutor,coach,trainer,sales rep,"
    "salesperson,recruiter,hr,product owner,scrum master,data scientist,sre,devops,"
    "admin,sysadmin,administrator,secretary,assistant,clerk,receptionist,translator,"
    "interpreter,economist,banker,trader,broker,realtor,real estate agent,contractor,"
    "freelancer,entrepreneur,owner,chemist,biologist,physicist,mathematician,"
    "statistician,epidemiologist,optometrist,radiologist,anesthesiologist,"
    "pediatrician,dermatologist,cardiologist,neurologist,oncologist,resident,"
    "postdoc,phd student,grad student,undergrad,undergraduate,freshman,sophomore,"
    "junior,senior,principal,staff engineer,tech lead,team lead,qa,tester,"
    "influencer,youtuber,streamer,podcaster,blogger,copywriter,marketer,strategist,"
    "planner,specialist,coordinator,supervisor,foreman,driver,courier,janitor,"
    "custodian,cleaner,housekeeper,butcher,fisherman,miner,welder,machinist,"
    "programme manager,program manager,project manager,pm,ux designer,ui designer,"
    "social worker,counselor,counsellor,pastor,priest,rabbi,imam,monk,nun,"
    "stay-at-home mom,stay-at-home dad,homemaker,retiree,volunteer,athlete,"
    "professional,specialist,auditor,underwriter,actuary,surveyor,hygienist,dev,"
    "eng,swe,sde,sre,ux,qa lead,qa engineer,devrel,data engineer,ml engineer,"
    "researcher,scholar,fellow,apprentice,trainee,associate,partner at,barber,"
    "hairdresser,stylist,tailor,florist,jeweler,jeweller,potter,sculptor,employee,"
    "staffer,contractor,officer,bank officer,clerk,civil servant,conveyancer,solicitor,"
    "barrister,notary,midwife,locksmith,guide,trekking guide,tour guide,teller".split(",")
)
#: "-er" words that are not jobs ("I'm a big eater", "I'm a beginner").
NOT_OCCUPATIONS = frozenset(
    "user,fan,lover,beginner,newbie,member,person,type,speaker,smoker,drinker,eater,"
    "sleeper,reader,learner,believer,follower,supporter,customer,subscriber,player,"
    "gamer,runner,walker,swimmer,climber,hiker,cyclist,biker,traveler,traveller,"
    "foodie,introvert,extrovert,ambivert,perfectionist,procrastinator,optimist,"
    "pessimist,night owl,early bird,morning person,night person,cat person,dog person,"
    "mother,father,parent,mom,dad,mum,grandmother,grandfather,citizen,resident of,"
    "native,expat,immigrant,vegetarian,vegan,pescatarian,teetotaler,christian,"
    "muslim,jew,buddhist,hindu,atheist,agnostic,catholic,protestant,sikh,mormon,"
    "bit,lot,little,big,huge,total,complete,real,fast,slow,quick,idiot,fool,"
    "genius,nerd,geek,dork,mess,wreck,man,woman,guy,girl,boy,lady,gentleman,"
    "kid,child,adult,teenager,teen,minor,senior citizen,twin,single mom,single dad,"
    "widow,widower,survivor,patient,donor,owner of,holder,partner,sucker,stickler,"
    "creature of habit,homebody,dreamer,worrier,overthinker,people pleaser".split(",")
)

NATIONALITIES = frozenset(
    "american,british,english,scottish,welsh,irish,canadian,australian,mexican,"
    "brazilian,argentinian,argentine,chilean,colombian,peruvian,venezuelan,cuban,"
    "spanish,portuguese,french,german,italian,dutch,belgian,swiss,austrian,swedish,"
    "norwegian,danish,finnish,icelandic,polish,czech,slovak,hungarian,romanian,"
    "bulgarian,greek,turkish,russian,ukrainian,serbian,croatian,lithuanian,latvian,"
    "estonian,georgian,armenian,israeli,palestinian,lebanese,syrian,egyptian,"
    "moroccan,algerian,tunisian,nigerian,ghanaian,kenyan,ethiopian,south african,"
    "indian,pakistani,bangladeshi,sri lankan,nepali,chinese,japanese,korean,"
    "vietnamese,thai,filipino,indonesian,malaysian,singaporean,taiwanese,iranian,"
    "iraqi,saudi,emirati,afghan,new zealander,kiwi,jamaican,haitian,dominican,"
    "puerto rican,latino,latina,latinx,hispanic,asian,african,european,"
    "christian,muslim,jewish,buddhist,hindu,atheist,agnostic,catholic,protestant,"
    "sikh,mormon,orthodox,quaker,pagan,spiritual".split(",")
)

#: Activities "I go X-ing", "I do X", "I play X" and bare hobby verbs accept.
HOBBY_VERBS = frozenset(
    "knit,crochet,paint,draw,sketch,bake,cook,garden,sew,quilt,journal,meditate,"
    "volunteer,brew,homebrew,woodwork,fish,hunt,sail,row,lift,jog,swim,hike,climb,"
    "surf,ski,snowboard,skate,dance,sing,collect,read,write,blog,vlog,stream,game,"
    "photograph,travel,run,cycle,bike,bowl,box,fence,golf,kayak,paddle,dive,scuba,"
    "bird-watch,birdwatch,camp,backpack,rock climb,boulder,skateboard,skydive,"
    "compose,produce,dj,perform,act,code,program,tinker,build,restore,foster,"
    "mentor,teach,tutor,coach,train,practice,practise,study,learn,cook,grow,bake,"
    "commute,walk,ride,drive,watch,listen,play,work out,workout,exercise,wake,sleep,"
    "drink,eat,shower,nap,pray,attend".split(",")
)

#: Objects that make a clause about the conversation, not about the person.
DEICTIC = frozenset(
    "it,this,that,these,those,them,him,her,you,your,yours,here,there,so,too,one,ones,"
    "some,something,anything,everything,nothing,stuff,things,that's,it's,what,how,"
    "when,where,which,why,who,whatever,both,either,neither,all,none,such,the idea,"
    "the answer,the code,the above,the following,the last one,the first one,"
    "the second one,your answer,your suggestion,your response,working with you,"
    "talking to you,this one,that one,the same,more,less,lots,a lot".split(",")
)

#: Capitalised words after "I'm" that are not a name ("I'm Sorry", "I'm OK").
NOT_NAMES = (
    frozenset(
        "sorry,ok,okay,fine,good,great,well,here,back,done,ready,not,so,just,really,still,"
        "also,actually,currently,trying,looking,going,getting,working,new,sure,glad,happy,"
        "sad,tired,hungry,bored,busy,free,home,in,out,on,off,up,down,confused,curious,lost,"
        "stuck,afraid,aware,excited,nervous,worried,very,too,always,never,usually,the,a,an,"
        "thinking,wondering,planning,hoping,learning,allergic,married,single,divorced,"
        "engaged,retired,vegan,vegetarian,pregnant,based,from,originally,moving,living,"
        "staying,currently,self-employed,unemployed,interested,into,obsessed,a bit,kind,"
        "pretty,quite,super,literally,honestly,finally,almost,about,over,under,no,yes,"
        "hi,hello,hey,back,online,late,early,still,dying,starving,exhausted,stressed,"
        "overwhelmed,feeling,fond,addicted,used,left-handed,right-handed,colorblind,deaf,"
        "blind,diabetic,asthmatic,celiac,coeliac,lactose,gluten,fluent,native,bilingual,"
        "trilingual,human,alive,awake,asleep,sick,ill,better,worse,certain,positive,"
        "convinced,done,finished,struggling,dealing,recovering,training,saving,studying,"
        "teaching,writing,reading,building,running,cooking,coding,fifo,dido".split(",")
    )
    | NATIONALITIES
)

#: Durable states "I'm X" that are worth remembering (transient moods are not).
TRAITS = frozenset(
    "left-handed,right-handed,ambidextrous,introverted,extroverted,an introvert,"
    "an extrovert,a night owl,an early bird,a morning person,a night person,"
    "a cat person,a dog person,short-sighted,nearsighted,farsighted,tall,short,"
    "bilingual,trilingual,multilingual,color-blind,colour-blind,tone-deaf,"
    "a vegetarian,a vegan,a smoker,a non-smoker,a nonsmoker,an ex-smoker,"
    "a former smoker,a homeowner,a renter,a tenant,a first-time buyer,"
    "a first-time homeowner,a new parent,a single parent,a twin,an only child,"
    "the oldest,the youngest,the eldest,a middle child,an immigrant,an expat,"
    "a us citizen,a citizen,a veteran,a volunteer,colorblind,colourblind".split(",")
)
