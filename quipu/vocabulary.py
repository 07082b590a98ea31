"""Words that name no subject on their own in a developer's prompt (generated: do not edit).

Written by scripts/build_vocabulary.py, which says how each list is derived. On the prompt path:
plain frozensets, nothing imported. quipu.query treats every word here as generic: it sharpens a
query that has a topic but never makes one, and never stands alone as evidence for a memory.
"""

# The everyday vocabulary of working on code: stems in the notes of >= 10 owners of memories-real or the prompts of >= 3 owners of prompts-dev, and a hand list.
EVERYDAY = frozenset(
    """
abov above aboved aboveer aboveers aboveing abovely abover abovers aboves aboving abovs across
acrossed acrosser acrossers acrosses acrossing acrossion acrossions action actionable actionabled
actionableing actionablely actionables actioned actioner actioners actiones actioning actions ad add
added addeds addes adding addings adds aded ades ading ads after aftered afterer afterers afteres
aftering afters again agained againer againers againes againing agains against againsted againster
againsters againstes againsting againstion againstions againsts agent agented agenter agenters
agentes agenting agention agentions agently agents ai aied aies aiing ais all alled alles alling
alls alreadi alreadied alreadier alreadiers alreadies alreadiing alreadis already alreadyed
alreadying alreadys also alsoed alsoes alsoing alsos alwai alwaied alwaies alwaiing alwais always an
and anded andes anding ands aned anes ani anied anies aniing aning anis ans any anyed anying anys
anyth anythed anyther anythers anythes anything anythings anyths api apied apies apiing apis appli
applied applieds applies appliing applis apply applyed applying applyings applys approach approached
approacher approachers approaches approaching approachs ar are ared areing arely ares aring ars as
ased ases asing ask asked askeds askes asking askings asks assist assistance assistanceing
assistancely assistances assistant assistanted assistanting assistants assisted assisteds assister
assisters assistes assisting assistings assistion assistions assists at ated ates ating ats author
authored authoreds authorer authorers authores authoring authorings authority authorityed
authoritying authoritys authorization authorizationed authorizationing authorizations authorize
authorized authorizeing authorizely authorizes authors auto autoed autoes autoing automat automater
automaters automatic automatically automaticallyed automaticallying automaticallys automaticed
automaticing automatics automats autos avoid avoided avoideds avoider avoiders avoides avoiding
avoidings avoids awesom awesome awesomed awesomeer awesomeers awesomeing awesomely awesomer
awesomers awesomes awesoming awesoms base based baseds baseed basees baseing basely bases bash
bashed bashes bashing bashs be befor before befored beforeer beforeers beforeing beforely beforer
beforers befores beforing befors behavior behavioral behavioraled behavioraling behaviorally
behaviorals behaviored behaviorer behaviorers behaviores behavioring behaviors being beings bes
between betweened betweener betweeners betweenes betweening betweens binari binaried binarier
binariers binaries binariing binaris binary binaryed binarying binarys block blocked blockeds
blockes blocking blockings blocks both bothed bothes bothing boths branch branched branches
branching branchings branchs break breaked breakes breaking breakings breaks broke broked brokeed
brokees brokeing brokely broken brokened brokener brokeners brokenes brokening brokens brokes bug
bugs build builded buildes building buildings builds built builted builtes builting builts but buts
by byed bying bys call called calleds calles calling callings calls came camed cameed camees cameing
camely cames can cannot cannoted cannoter cannoters cannotes cannoting cannotion cannotions cannots
cans case cased caseed casees caseing casely cases chang change changed changeds changeing changely
changes changing changings changs check checked checkeds checkes checking checkings checks cheer
cheered cheeres cheering cheers ci cied cies ciing cis claud claude clauded claudeing claudely
claudes clauding clauds clean cleaned cleaneds cleanes cleaning cleanings cleans cli clied client
cliented clientes clienting clients clies cliing clis code coded codeed codees codeing codely codes
coding codings com come comed comeed comees comeing comely comes coming comings command commanded
commander commandered commandering commanders commandes commanding commands comment commented
commenter commenters commentes commenting commention commentions commently comments commit commited
commiter commiters commites commiting commition commitions commitment commitmented commitmenting
commitmently commitments commits committed committeds committing committings common commoned
commoner commoners commones commoning commons compat compated compater compaters compates
compatibility compatibilityed compatibilitying compatibilitys compatible compatibled compatibleing
compatiblely compatibles compating compation compations compats complet complete completed
completeds completeer completeers completeing completely completelyed completelying completelys
completer completers completes completing completings completion completioned completioning
completions complets coms config configed configer configers configes configing configs configur
configurability configurabilityed configurabilitying configurabilitys configurable configurabled
configurableing configurablely configurables configuration configurationed configurationing
configurations configure configured configureds configureer configureers configureing configurely
configurer configurers configures configuring configurings configurs consist consisted consistency
consistencyed consistencying consistencys consistent consistented consistenting consistently
consistentlyed consistentlying consistentlys consistents consister consisters consistes consisting
consistion consistions consists contain contained containeds container containered containering
containers containes containing containings contains content contented contenter contenters
contentes contenting contention contentioned contentioning contentions contently contents context
contexted contexter contexters contextes contexting contextion contextions contexts continu
continuation continuationed continuationing continuations continue continued continueer continueers
continueing continuely continuer continuers continues continuing continuings continuous continuoused
continuousing continuously continus contract contracted contracter contracters contractes
contracting contraction contractions contracts contribut contribute contributed contributeer
contributeers contributeing contributely contributer contributers contributes contributing
contributings contribution contributioned contributioning contributions contributs control controled
controler controlers controles controling controlled controlleds controller controllered
controllering controllers controlling controllings controls convent convented conventer conventers
conventes conventing convention conventional conventionaled conventionaling conventionals
conventioned conventioning conventions convently convents convers conversation conversational
conversationaled conversationaling conversationals conversationed conversationing conversations
conversed converser conversers converses conversing conversion conversioned conversioning
conversions cool cooled cooles cooling cools core cored coreed corees coreing corely cores corner
cornered cornerer cornerers corneres cornering corners correct correctable correctabled
correctableing correctablely correctables corrected correcteds correcter correcters correctes
correcting correctings correction corrections correctness correctnessed correctnesses correctnessing
corrects coverag coverage coveraged coverageer coverageers coverageing coveragely coverager
coveragers coverages coveraging coverags creat create created createds createing creately creates
creating creatings creats current currented currenter currenters currentes currenting currention
currentions currently currentlyed currentlying currentlys currents custom customed customer
customered customering customers customes customing customs data dataed dataes dataing datas debug
debuged debuger debugers debuges debugging debuggings debuging debugs default defaulted defaulter
defaulters defaultes defaulting defaultion defaultions defaults defin define defined defineds
defineer defineers defineing definely definer definers defines defining definings defins depend
depended dependencies dependency dependencyed dependencying dependencys dependent dependented
dependenting dependently dependents depender dependers dependes depending dependings depends
descript descripted descripter descripters descriptes descripting description descriptioned
descriptioning descriptions descriptive descriptiveing descriptively descriptives descripts design
designed designeds designer designers designes designing designings designs detail detailed
detaileds detailer detailers detailes detailing details dev develop developed developer developered
developering developers developes developing developings development developmented developmenting
developmently developments develops devs diff differ differed difference differenceing differencely
differences different differented differenting differently differentlyed differentlying differentlys
differents differer differers differes differing differs diffes diffs direct directed directeds
directer directers directes directing direction directioned directioning directions directli
directlied directlier directliers directlies directliing directlis directly directlyed directlying
directlys directori directoried directorier directoriers directories directoriing directoris
directory directoryed directorying directorys directs do doc docs document documentation
documentationed documentationing documentations documented documenteds documenter documenters
documentes documenting documentings documention documentions documently documents doe doed doeing
does doing doings done doned doneed donees doneing donely dones dos each eached eaches eaching eachs
edg edge edged edgeing edgely edges edging edgs edit editable editabled editableing editablely
editables edited editeds editer editers edites editing editings edition editions edits effect
effected effecter effecters effectes effectful effectfuled effectfuling effectfuls effecting
effection effections effective effectiveing effectively effectivelyed effectivelying effectivelys
effectiveness effectivenessed effectivenesses effectivenessing effectives effects end ended endes
ending endings ends engin engine engined engineer engineered engineering engineerings engineers
engineing enginely enginer enginers engines engining engins ensur ensure ensured ensureer ensureers
ensureing ensurely ensurer ensurers ensures ensuring ensurings ensurs entri entried entries entriing
entris entry entryed entrying entrys env enved enves enving envs error errored errorer errorers
errores erroring errors etc etced etces etcing etcs everi everied everier everiers everies everiing
everis every everyed everying everys everyth everythed everyther everythers everythes everything
everythings everyths exampl example exampled exampleer exampleers exampleing examplely exampler
examplers examples exampling exampls except excepted excepter excepters exceptes excepting exception
exceptional exceptionaled exceptionaling exceptionals exceptioned exceptioning exceptions excepts
execut executable executabled executableing executablely executables execute executed executeds
executeer executeers executeing executely executer executers executes executing executings execution
executioned executioning executions executs exist existed existeds exister existers existes existing
existings existion existions exists expect expectation expectationed expectationing expectations
expected expecteds expecter expecters expectes expecting expection expections expects explicit
explicited expliciter expliciters explicites expliciting explicition explicitions explicitli
explicitlied explicitlier explicitliers explicitlies explicitliing explicitlis explicitly
explicitlyed explicitlying explicitlys explicits export exported exporteds exporter exporters
exportes exporting exportings exportion exportions exports fail failed faileds failes failing
failings fails failur failure failured failureer failureers failureing failurely failurer failurers
failures failuring failurs fals false falsed falseing falsely falses falsing fast fasted fastes
fasting fasts featur feature featured featureds featureer featureers featureing featurely featurer
featurers features featuring featurs feedback feedbacked feedbacker feedbackers feedbackes
feedbacking feedbacks file filed fileed filees fileing filely files filter filtered filterer
filterers filteres filtering filterings filters fine fined fineed finees fineing finely fines finish
finished finisheds finisher finishers finishes finishing finishings finishs first firsted firstes
firsting firsts fix fixed fixeds fixes fixing fixings fixs focu focued focues focuing focus follow
followed followeds follower followers followes following followings follows for format formated
formater formaters formates formating formation formations formats formatted formatteds formatting
formattings fors framework frameworked frameworker frameworkers frameworkes frameworking frameworks
from froms full fulled fulles fulling fulls function functional functionaled functionaling
functionalities functionality functionalityed functionalitying functionalitys functionally
functionals functioned functioner functioners functiones functioning functions gener general
generaled generaling generally generallyed generallying generallys generals generate generated
generateds generateing generately generates generating generatings generation generationed
generationing generations generative generativeing generatively generatives generator generatored
generatoring generators genered generer generers generes generic genericed genericing generics
genering geners get gets getting gettings git github githubed githuber githubers githubes githubing
githubs gits go goed going goings good gooded goodes gooding goods gos great greated greates
greating greats guidelin guideline guidelined guidelineer guidelineers guidelineing guidelinely
guideliner guideliners guidelines guidelining guidelins ha haed haing handl handle handled handleds
handleing handlely handles handling handlings handls has have haved haveed havees haveing havely
haves helper helpered helperer helperers helperes helpering helpers high highed highes highing highs
hook hooked hookes hooking hooks how howed howes howing hows http https idea ideaed ideaes ideaing
ideas if ifed ifes ifing ifs implement implementation implementationed implementationing
implementations implemented implementeds implementer implementered implementering implementers
implementes implementing implementings implemention implementions implemently implements import
importance importanceing importancely importances important importanted importanting importants
imported importeds importer importered importering importers importes importing importings importion
importions imports in includ include included includeds includeer includeers includeing includely
includer includers includes including includings includs ined ines ining input inputed inputer
inputers inputes inputing inpution inputions inputs ins instal instaled instaler instalers instales
instaling install installation installationed installationing installations installed installeds
installer installers installes installing installs instally instals instead insteaded insteader
insteaders insteades insteading insteads instruct instructed instructeds instructer instructers
instructes instructing instruction instructioned instructioning instructions instructs integr
integrate integrated integrateds integrateing integrately integrates integrating integratings
integration integrationed integrationing integrations integred integrer integrers integres integring
integrity integrityed integritying integritys integrs interact interacted interacter interacters
interactes interacting interactings interaction interactioned interactioning interactions
interactive interactiveing interactively interactives interacts interfac interface interfaced
interfaceer interfaceers interfaceing interfacely interfacer interfacers interfaces interfacing
interfacs intern internal internaled internaling internally internallyed internallying internallys
internals interned interner interners internes interning interns into intoed intoes intoing intos is
ised ises ising issu issue issued issueing issuely issues issuing issus it ited item itemed itemer
itemers itemes iteming itemize itemized itemizeds itemizeing itemizely itemizes items ites iting its
job jobs js json jsons keep keeped keepes keeping keepings keeps kei keied keies keiing keis key
keyed keyeds keying keys languag language languaged languageer languageers languageing languagely
languager languagers languages languaging languags layer layered layerer layerers layeres layering
layers left lefted leftes lefting lefts level leveled leveler levelers leveles leveling levels
librari libraried librarier librariers libraries librariing libraris library libraryed librarying
librarys like liked likeed likees likeing likely likelyed likelying likelys likes limit limitation
limitationed limitationing limitations limited limiteds limiter limiters limites limiting limitings
limition limitions limits line lined lineed linees lineing linely lines lint linted lintes linting
lintings lints list listed listeds listes listing listings lists live lived liveed livees liveing
lively lives living livings local locale localed localeer localeers localeing localely localer
localers locales localing localization localizationed localizationing localizations localized
localizeds locally locallyed locallying locallys locals log logged loggeds logging loggings logic
logical logicaled logicaling logically logicallyed logicallying logicallys logicals logiced logicer
logicers logices logicing logics logs low lowed lowes lowing lows mai maied maies maiing main mained
maines maining mains maintain maintainability maintainabilityed maintainabilitying maintainabilitys
maintainable maintainabled maintainableing maintainablely maintainables maintained maintaineds
maintainer maintainered maintainering maintainers maintaines maintaining maintainings maintains mais
make maked makeed makees makeing makely makes making makings manag manage managed manageds manageer
manageers manageing managely management managemented managementing managemently managements manager
managered managering managers manages managing managings manags map mapped mappeds mapping mappings
maps match matched matches matching matchings matchs may mayed maying mays mcp mcps md mds messag
message messaged messageer messageers messageing messagely messager messagers messages messaging
messags mode moded modeed modees modeing model modeled modeler modelers modeles modeling modelings
models modely modes modifi modified modifieds modifier modifiers modifies modifiing modifis modify
modifyed modifying modifyings modifys modul modulates module moduled moduleer moduleers moduleing
modulely moduler modulers modules moduling moduls more mored moreed morees moreing morely mores most
mosted mostes mosting mosts move moved moveds moveed movees moveing movely moves moving movings
multi multied multies multiing multipl multiple multipled multipleer multipleers multipleing
multiplely multipler multiplers multiples multipling multipls multis must musted mustes musting
musts name named nameds nameed namees nameing namely names naming namings need needed neededs needes
needing needs never nevered neverer neverers neveres nevering nevers new newed newes newing news
nice niced niceed nicees niceing nicely nicelyed nicelying nicelys nices no node noded nodeed nodees
nodeing nodely nodes noed noing non nons nope noped nopeed nopees nopeing nopely nopes nos not note
noted noteds noteed notees noteing notely notes noth nothed nothes nothing nothings noths noting
notings nots of ofed ofes ofing ofs ok okai okaied okaies okaiing okais okay okayed okaying okays
oked okes oking oks on onc once onced onceing oncely onces oncing oncs one oned oneing onely ones
oning onli onlied onlies onliing onlis only onlyed onlying onlys ons open opened opener openers
openes opening openings opens oper operate operated operateing operately operates operating
operatings operation operational operationaled operationaling operationals operationed operationing
operations operator operatored operatoring operators opered operer operers operes opering opers
option optional optionaled optionaling optionally optionallyed optionallying optionallys optionals
optioned optioner optioners optiones optioning options or order ordered orderer orderers orderes
ordering orderings orders ored ores oring ors other othered otherer otherers otheres othering others
output outputed outputer outputers outputes outputing outpution outputions outputs over overed
overer overers overes overing overs own owned owneds ownes owning ownings owns packag package
packaged packageer packageers packageing packagely packager packagered packagering packagers
packages packaging packagings packags part parted partes parting parts pass passed passeds passes
passing passings patch patched patches patching patchs path pathed pathes pathing paths pattern
patterned patterner patterners patternes patterning patterns pend pended pendes pending pendings
pends per perfect perfected perfecter perfecters perfectes perfecting perfection perfections
perfects perform performance performanceing performancely performances performant performanted
performanting performants performed performeds performer performers performes performing performings
performs pers phase phased phaseed phasees phaseing phasely phases pick picked pickes picking
pickings picks piec piece pieced pieceing piecely pieces piecing piecs plan planned planneds
planning plannings plans platform platformed platformer platformers platformes platforming platforms
pleas please pleased pleaseing pleasely pleases pleasing point pointed pointes pointing points pr
pre prefer prefered preference preferenceing preferencely preferences preferer preferers preferes
prefering preferred preferreds prefers preing pres problem problemed problemer problemers problemes
probleming problems proce proced proceed proceeds procees proceing procely proces process processed
processeds processer processers processes processing processings procession processions product
producted producter producters productes producting production productioned productioning
productions products progress progressed progresser progressers progresses progressing progression
progressioned progressioning progressions progressive progressiveing progressively progressivelyed
progressivelying progressivelys progressives project projected projecter projecters projectes
projecting projection projections projects prompt prompted prompteds promptes prompting promptings
prompts protocol protocoled protocoler protocolers protocoles protocoling protocols provid provide
provided provideds provideer provideers provideing providely provider providered providering
providers provides providing providings provids prs public publication publicationed publicationing
publications publiced publicer publicers publices publicing publics pull pulled pulleds pulles
pulling pulls push pushed pusheds pushes pushing pushings pushs pytest pytested pytester pytesters
pytestes pytesting pytestion pytestions pytests python pythoned pythoner pythoners pythones pythonic
pythoniced pythonicing pythonics pythoning pythons quick quicked quickes quicking quickli quicklied
quicklies quickliing quicklis quickly quicklyed quicklying quicklys quicks read readed reades readi
readied readies readiing readiness readinessed readinesses readinessing reading readings readis
reads ready readyed readying readys refactor refactored refactorer refactorers refactores
refactoring refactorings refactors refer refered reference referenceing referencely references
referer referers referes refering referred referreds refers releas release released releaseds
releaseer releaseers releaseing releasely releaser releasered releasering releasers releases
releasing releasion releasions remain remained remainer remainers remaines remaining remainings
remains repo repoed repoes repoing report reported reporteds reporter reporters reportes reporting
reportings reportion reportions reports repos repositori repositoried repositorier repositoriers
repositories repositoriing repositoris repository repositoryed repositorying repositorys request
requested requesteds requester requesters requestes requesting requestings requestion requestions
requests requir require required requireds requireer requireers requireing requirely requirement
requiremented requirementing requiremently requirements requirer requirers requires requiring
requirings requirs rerun reruned reruner reruners rerunes reruning rerunning rerunnings reruns
resolv resolve resolved resolveds resolveer resolveers resolveing resolvely resolver resolvered
resolvering resolvers resolves resolving resolvings resolvs respons response responsed responseer
responseers responseing responsely responser responsers responses responsible responsibled
responsibleing responsiblely responsibles responsing responsion responsions rest rested restes
resting rests resum resume resumed resumeer resumeers resumeing resumely resumer resumers resumes
resuming resums retri retried retries retriing retris retry retryed retrying retrys return returned
returneds returner returners returnes returning returnings returns review reviewability
reviewabilityed reviewabilitying reviewabilitys reviewable reviewabled reviewableing reviewablely
reviewables reviewed revieweds reviewer reviewered reviewering reviewers reviewes reviewing
reviewings reviews right righted rightes righting rights root rooted rooteds rootes rooting roots
rule ruled ruleed rulees ruleing rulely rules ruling rulings run running runnings runs runtim
runtime runtimed runtimeer runtimeers runtimeing runtimely runtimer runtimers runtimes runtiming
runtims same samed sameed samees sameing samely sames schema schemaed schemaes schemaing schemas
scope scoped scopeds scopeed scopees scopeing scopely scopes script scripted scriptes scripting
scriptings scripts see seeing sees separ separate separated separateing separately separatelyed
separatelying separatelys separates separation separationed separationing separations separed
separer separers separes separing separs server servered serverer serverers serveres servering
servers set sets setting settings setup setuped setuper setupers setupes setuping setups share
shared shareds shareed sharees shareing sharely shares sharing sharings should shoulded shouldes
shoulding shoulds singl single singled singleing singlely singles singling singls skill skilled
skilles skilling skills skip skipped skippeds skips slow slowed slowes slowing slows so soed soing
someth somethed somether somethers somethes something somethings someths sos sourc source sourced
sourceing sourcely sources sourcing sourcs spec specif specifed specifer specifers specifes specific
specifically specificallyed specificallying specificallys specification specificationed
specificationing specifications specificed specificing specifics specifing specifs specs src srcs
stage staged stageds stageed stagees stageing stagely stages staging stagings start started starteds
startes starting startings starts state stated stateds stateed statees stateful statefuled
statefuling statefuls stateing stately states statu statued statues statuing status step steps store
stored storeds storeed storees storeing storely stores string stringed stringes stringing strings
structur structural structuraled structuraling structurally structurallyed structurallying
structurallys structurals structure structured structureds structureer structureers structureing
structurely structurer structurers structures structuring structurs stuff stuffes stuffs style
styled styleds styleed stylees styleing stylely styles styling stylings suggest suggested suggester
suggesters suggestes suggesting suggestings suggestion suggestioned suggestioning suggestions
suggests suit suite suited suiteing suitely suites suiting suits support supported supporteds
supporter supporters supportes supporting supportings supportion supportions supports sure sured
sureed surees sureing surely sures surfac surface surfaced surfaceer surfaceers surfaceing surfacely
surfacer surfacers surfaces surfacing surfacs sync synced synceds synces syncing syncs system
systemed systemer systemers systemes systemic systemiced systemicing systemics systeming systems
tabl table tabled tableing tablely tables tabling tabls tag tagged taggeds tags target targeted
targeteds targeter targeters targetes targeting targetings targetion targetions targets task tasked
taskes tasking tasks templat template templated templateer templateers templateing templately
templater templaters templates templating templatings templation templations templats test tested
testeds testes testing testings tests text texted textes texting texts than thank thanked thankes
thanking thanks thans that thats the thei theied theies theiing theing theis them thems then thens
there thered thereed therees thereing therely theres thes these thesed theseed thesees theseing
thesely theses they theyed theying theys thi thied thies thiing thing thinged thinges thinging
things this through throughed throughes throughing throughs tidi tidied tidies tidiing tidis tidy
tidyed tidying tidys time timed timeds timeed timees timeing timely times timing timings to todo
todoed todoes todoing todos toed toing toml tomled tomles tomling tomls tool tooled tooles tooling
toolings tools tos true trueing trues truth truthed truthes truthing truths ts type typed typeds
typeed typees typeing typely types typescript typescripted typescripter typescripters typescriptes
typescripting typescription typescriptions typescripts typing typings under undered underer underers
underes undering unders unit united uniter uniters unites uniting unition unitions units unless
unlessed unlesser unlessers unlesses unlessing unlession unlessions up updat update updateable
updateabled updateableing updateablely updateables updated updateds updateer updateers updateing
updately updater updaters updates updating updatings updation updations updats uped upes uping ups
us usag usage usaged usageer usageers usageing usagely usager usagers usages usaging usags use used
useds useful usefuled usefuling usefuls useing usely user usered userer userers useres usering users
uses using usings util utiled utiler utilers utiles utiling utilities utility utilityed utilitying
utilitys utilize utilized utilizeing utilizely utilizes utils valid validate validated validateds
validateing validately validates validating validatings validation validationed validationing
validations valided valider validers valides validing valids valu value valued valueing valuely
values valuing valus variabl variable variabled variableer variableers variableing variablely
variabler variablers variables variabling variabls verifi verifiable verifiabled verifiableing
verifiablely verifiables verified verifieds verifier verifiers verifies verifiing verifis verify
verifyed verifying verifyings verifys version versioned versioner versioners versiones versioning
versionings versions via viaed viaing vias vs wai waied waies waiing wais way wayed waying ways what
whats when whens where whered whereed wherees whereing wherely wheres which whiched whiches whiching
whichs whole wholed wholeed wholees wholeing wholely wholes why whyed whying whys with withed withes
withing without withouted withouter withouters withoutes withouting withoution withoutions withouts
withs work worked workeds workes workflow workflowed workflower workflowers workflowes workflowing
workflows working workings works workspac workspace workspaced workspaceer workspaceers workspaceing
workspacely workspacer workspacers workspaces workspacing workspacs write writed writeed writees
writeing writely writes writing writings wrong wronged wronges wronging wrongs ye yeah yeahed yeahes
yeahing yeahs yeing yep yeps yes you youed youing your youred youres youring yours yous
""".split()
)

# Stop words of french, german, spanish, portuguese, italian, dutch (stop-words package, BSD-3-Clause) and conversational words of those languages, with and without accents.
FOREIGN = frozenset(
    """
a aan abbia abbiamo abbiano abbiate aber accanto accord acerca actualmente acuerdo ad adelante
ademas además adesso adonde aestarian af afirmo afirmó afora agl agli agora agrego agregó ahi ahora
ahí ai aie aient aies ait al alcun alcuno algmas algo algun alguna algunas alguno algunos alguns
algún ali all all' alla alle allem allen allende aller alles allez allo allora alors alrededor als
also alteracoes alterações altijd altra altre altri altro am ambos amen amp ampleamos amén an anadio
anche ancora ander andere anderem anderen anderer anderes anderm andern anders anderungen ante
anterior antes ao aos apenas apontar apos applique appliquer appo apres aproximadamente après após
aquel aquela aquelas aquele aqueles aquellas aquellos aqui aquilo aquí arregla arreglar arriba as
aseguro aseguró asi assai así ate atras atrás attendu até au auch aucun aucuns auec auf aufgabe
aufgaben aun aunque aura aurai auraient aurais aurait auras aurez auriez aurions aurons auront aus
aussi autre autres aux avaient avais avait avant avec avemmo avendo avere avesse avessero avessi
avessimo aveste avesti avete aveva avevamo avevano avevate avevi avevo avez aviez avions avoir avons
avra avrai avranno avrebbe avrebbero avrei avremmo avremo avreste avresti avrete avro avrà avrò
avuta avute avuti avuto avverso ayant ayante ayantes ayants ayer ayez ayons añadió aún bajo bastante
bei beleza bem ben bene bien bij bin bis bist bitte bom bon bonne buen buena buenas bueno buenos
buono c c' c. ca ca. cabe cabo cada cambios caminho car cara casi ce ceci cela celà cerca certo ces
cet cette ceux ch' changements chaque che chez chi chose choses ci cierta ciertas cierto ciertos
cima cinco cinque cio circa co' cogli coi col colla colle collo com come comento comentó comme
comment commit como comprare comprido con concernant conhecido conmigo connosco conocer consecutivi
consecutivo conseguimos conseguir considera considero consideró consigo consigue consiguen consigues
consoante contigo continua continuar continue continuer continúa contra contre contro convosco
convusco corrente corrige corriger corrigir cosa cosas cosi cosi" creo cual cuales cualquier cuando
cuanto cuatro cuenta cui cui" cómo d d' d'accord da daar dado dadurch dagl dagli daher dai dal dale
dall dall' dalla dalle dallo damit dan dank danke dann dans dar darum das dass dasselbe dat dazu daß
de de' debaixo debe deben debido debut decir dedans degl degli dehors dei dein deine deinem deinen
deiner deines dejante dejo dejó del dela delas dele deles dell dell' della delle dello dem demas
demselben demás den denn denselben dentro depois depuis der derer derriere derrière derselbe
derselben des desde deshalb desligado despues después desselben dessen dessous dessus deu deux
devant deve devem devera devers deverá devo devoir devrait devrez devriez devrions devrons devront
deze di diante dice dicen dich dicho die dieron dies diese dieselbe dieselben diesem diesen dieser
dieses diferente diferentes dijeron dijo dio dir dire direita dit dixit diz dizer do doch doe doen
dois doit donc donde dont door dopo doppio dort dos dov dove droite du due duo durant durante durch
dus dès début dù e ebbe ebbero ebbi eccetto ecco ed een eens egli ein eine einem einen einer eines
einig einige einigem einigen einiger einiges einmal einverstanden ejemplo el ela elas ele eles ella
ellas elle elles ello ellos em embargo emmi empleais emplean emplear empleas empleo en encima encore
encuentra endeans endéans enquanto ensuite entao entenant entonces entre entro então envers environ
er era erais eram eramos eran erano erar eras eravamo eravate eres eri ero erreur erro error errore
es esa esas escontra ese eso esos essa essai essaie essas essayer esse essendo essere esses est esta
estaba estabais estabamos estaban estabas estad estada estadas estado estados estais estamos estan
estando estao estar estara estaran estaras estare estareis estaremos estaria estariais estariamos
estarian estarias estará estarán estarás estaré estaréis estaría estaríais estaríamos estarían
estarías estas estava estavam estavamos este esteis esteja estejam estejamos estemos esten estes
esteve estive estivemos estiver estivera estiveram estiveramos estiverem estivermos estivesse
estivessem estivessemos estivéramos estivéssemos esto estos estou estoy estre estuve estuviera
estuvierais estuvieramos estuvieran estuvieras estuvieron estuviese estuvieseis estuviesemos
estuviesen estuvieses estuvimos estuviste estuvisteis estuviéramos estuviésemos estuvo está
estábamos estáis están estás estávamos estão esté estéis estén estés et etaient etais etait etant
etante etantes etants etape etat ete etee etees etes etiez etions etre etreau etwas eu euch eue euer
eues eumes eure eurem euren eurent eurer eures eus eusse eussent eusses eussiez eussions eut eutes
eux ex excepte excepto excepté exceto existe existen explico explicó expreso expresó eûmes eût eûtes
faccia facciamo facciano facciate faccio facemmo facendo facesse facessero facessi facessimo faceste
facesti faceva facevamo facevano facevate facevi facevo fahre fai faire fais faisez fait faites
falta fanno fara farai faranno fare farebbe farebbero farei faremmo faremo fareste faresti farete
faro farà fará farò fatto faut faz fazer fazia fece fecero feci fehler fehlt fertig fez fim fin fine
fini finie fino foi fois fomos fonctionne fonctionner font for fora foram foramos force forem formos
fors fort fosse fossem fossemos fossero fossi fossimo foste fosti fout fra fu fue fuera fuerais
fueramos fueran fueras fueron fuerza fuese fueseis fuesemos fuesen fueses fui fuimos fuiste fuisteis
fumes fummo funciona funciono funcionou funcionó funktioniert fuori fur furent furono fus fusse
fussent fusses fussiez fussions fut futes fuéramos fuésemos fôramos fôssemos fûmes fût fûtes für ga
ge geen gegen geht geklappt genau genial gente geweest gewesen gia gia" giu giu" giù gli go goed
gracias gran grande grandes grazie gueno gut génial ha haar hab habe habeis haben haber habia
habiais habiamos habian habias habida habidas habido habidos habiendo habra habran habras habre
habreis habremos habria habriais habriamos habrian habrias habrá habrán habrás habré habréis habría
habríais habríamos habrían habrías habéis había habíais habíamos habían habías hace haceis hacemos
hacen hacer hacerlo haces hacia haciendo had hago hai haja hajam hajamos han hanno hao has hasta hat
hatte hatten hattest hattet haut havemos havia hay haya hayais hayamos hayan hayas hayáis haz he heb
hebben hecho heeft hei hem hemo hemos het hicieron hier hij hin hinter hizo ho hoe horas hormis hors
houve houvemos houver houvera houveram houveramos houverao houverei houverem houveremos houveria
houveriam houveriamos houvermos houverá houverão houveríamos houvesse houvessem houvessemos
houvéramos houvéssemos hoy hube hubiera hubierais hubieramos hubieran hubieras hubieron hubiese
hubieseis hubiesemos hubiesen hubieses hubimos hubiste hubisteis hubiéramos hubiésemos hubo hun há
hão i ich ici ie iemand iets igual ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres ik il ils im in
incluso indem indi indico indicó indietro informo informó infra iniciar inicio ins inte intenta
intentais intentalo intentamos intentan intentar intentas intento inté inténtalo invece io ir ira
irá is isso ist ista iste isto j ja je jede jedem jeden jeder jedes jene jenem jenen jener jenes
jetzt joignant jouxte junto jusque juste já kan kann kannst kein keine keinem keinen keiner keines
klaar klappt klar kon konnen konnt konnte kunnen können könnt könnte l l' la lado largo las lavoro
le lei les leur leurs lez lhe lhes li ligado listo llego llegó lleva llevar lo loro lors los luego
lugar lui lungo luy là lès m ma maar mach machen maggior maggiore mai maintenant maioria maiorias
mais malgrado malgre malgré man manche manchem manchen mancher manches manda manera manifesto
manifestó marche marcher marché mas mayor me meco mediante meer meglio mein meine meinem meinen
meiner meines mejor meme men menciono mencionó menos merci mes mesme mesmo met meu meus mi mia miar
mias mich mie miei mientras mij mijn mine minha minhas mio mios mir mis misma mismas mismo mismos
mit modification modifications modo modode moet moi moins molta molti molto momento mon mot
moyennant mucha muchas mucho muchos muito muitos muss mussen musst musste muy muß mußt más même mí
mía mías mío míos müssen müßt n n' na naar nach nachdem nachste nada nadie nao nas ne ne' negl negli
nei nein nel nell nell' nella nelle nello nem ni nicht nichts niet niets ningun ninguna ningunas
ninguno ningunos ningún no noch nochmal nog nogmaals noi nom nome nomme nommee nommes nommé nommée
nommés non nonobstant nonostante nos nosotras nosotros nossa nossas nosso nossos nostra nostre
nostri nostro notre nous nouveau nouveaux nove novo nu nuestra nuestras nuestro nuestros nueva
nuevas nuevo nuevos num numa nun nunca nuovi nuovo nur não nächste nós o ob obrigada obrigado ocho
oder of ogn' ogni oh ohne ok okay oltre om omdat on onde onder ons ont ook op or ora os otra otras
otro otros otto ou oue oui outra outre outro ove over où pa pa' par par-devant para parce parece
parfait parmi parole parte partir pas pasada pasado passe passo passt passé pegar peggio pegli pei
pel pela pelas pella pello pelo pelos pendant pendentes pendiente pendientes per pera perante perche
perché perfecto perfeito perfekt perfetto pero persone personne personnes però pesar peu peut piece
piu piu" pièce più più" plante planté plein plupart plus plusieurs poca pocas pochi poco pocos pode
podeis podemos poder podera poderá podia podra podran podria podriais podriamos podrian podrias
podrá podrán podría podrían poi point poner por porque posible pour pourquoi pourquoy poursuis
poursuivre pousse povo pra prima primer primera primero primeros primo principalmente pro prochaine
promeiro promesso pronto propia propias propio propios prosegui proximo proximos prà próximo
próximos pudo pueda puede pueden puedo pues puis puo pur qtinhamos qtínhamos qu qu' qua qual qualche
qualcun qualcuno quale qualmente qualquer quand quando quanta quante quanti quanto quarto quasi
quattro que quedo quedó quel quella quelle quelles quelli quello quels quem queremos questa queste
questi questo qui quien quienes quiere quieto quindi quinto quién quoi quoy qué quê realizado
realizar realizo realizó reeds reessaie reessayer relance relancer respecto reste rez rien riprova
rispetto réessaie réessayer s s' s.v. sa sabe sabeis sabemos saben saber sabes salvante salvo sans
sao sara sarai saranno sarebbe sarebbero sarei saremmo saremo sareste saresti sarete saro sarà sarò
sauf schritt se sea seais seamos sean seas seco secondo segue seguir segun segunda segundo según
sehr sei seid sein seine seinem seinen seiner seines seis seja sejam sejamos selbst selon sem sembra
sembrava sempre senalo senao sentid sentida sentidas sentido sentidos sentir senza senão ser sera
serai seraient serais serait seran serao seras sere serei sereis seremos serez seria seriais seriam
seriamos serian serias seriez serions serons seront será serán serás serão seré seréis sería seríais
seríamos serían serías ses sette seu seulement seus seáis señaló si sia siamo siano siate sich sido
sie siempre sien siendo siente siete sigue siguiente sim sin sind sino sintiendo so sob sobre soi
soient sois soit sola solamente solas solche solchem solchen solcher solches soll sollen sollst
sollt sollte solo solos somente sommes somos son sondern sono sonst sont sopra soprattutto sotto sou
sous soweit sowie soy soyez soyons sta stai stando stanno stara starai staranno stare starebbe
starebbero starei staremmo staremo stareste staresti starete staro starà starò stati stato stava
stavamo stavano stavate stavi stavo stemmo stesse stessero stessi stessimo stesso steste stesti
stette stettero stetti stia stiamo stiano stiate sto su sua suas sub subito sue sugl sugli sui suis
suite suivant sujet sul sull sulla sulle sullo suo suoi super sur sus suso suya suyas suyo suyos são
sí só sólo sù t ta tache taches tal tambem tambien también também tampoco tan tandis tanta tante
tanti tanto tarea tareas tarefa tarefas te teco tegen tellement tels tem temos tempo tendra tendran
tendras tendre tendreis tendremos tendria tendriais tendriamos tendrian tendrias tendrá tendrán
tendrás tendré tendréis tendría tendríais tendríamos tendrían tendrías tened teneis tenemos tener
tenga tengais tengamos tengan tengas tengo tengáis tenha tenham tenhamos tenho tenia teniais
teniamos tenian tenias tenida tenidas tenido tenidos teniendo tenta tentar tentaram tente tentei
tenéis tenía teníais teníamos tenían tenías ter tera terao tercera terei teremos teria teriam
teriamos termine terminou terminé terzo terá terão teríamos tes teu teus teve ti tiempo tiene tienen
tienes tinha tinham tinhamos tipo tirante tive tivemos tiver tivera tiveram tiveramos tiverem
tivermos tivesse tivessem tivessemos tivéramos tivéssemos toch toda todas todavia todavía todo todos
toen toi ton tot total touchant tous tout toutes tra trabaja trabajais trabajamos trabajan trabajar
trabajas trabajo trabalhar trabalho tramite tranne tras trata traves través tre tres triplo trop
trás très tu tua tuas tue tuo tuoi tus tutta tutte tutti tutto tuve tuviera tuvierais tuvieramos
tuvieran tuvieras tuvieron tuviese tuvieseis tuviesemos tuviesen tuvieses tuvimos tuviste tuvisteis
tuviéramos tuviésemos tuvo tuya tuyas tuyo tuyos tâche tâches tém têm tínhamos tú u uber ubernimm
uit ultima ultimar ultimas ultimo ultimos um uma umas un una unas und une uno unos uns unser unsere
unserem unseren unserer unseres unter usa usais usamos usan usar usas uso usted uw va vai vais vale
valeu valeur valor vamos van varias varios vas vas-y vaya veces veel veja ver verdad verdade
verdadeiro verdadera verdadero verder vers verso versuch versuche versus vez vi via viaultimo
viaúltimo viel vn vna vne vno voce voces você vocês voi voici voie voient voila voilà vois voit
volte vom von vont voor vor vos vosostras vosostros vosotras vosotros vostra vostre vostri vostro
votre vous voy vs vu vuelve vuestra vuestras vuestro vuestros vusco vía wahrend wann want war waren
warst warum was wat we weg weil weiter weitere weitermachen wel welche welchem welchen welcher
welches wenn wer werd werde werden werdet weshalb wezen wie wieder wieso wij wil will wir wird wirst
wo woher wohin wollen wollte worden wordt wurde wurden während würde würden y ya yo zal ze zei zelf
zich zij zijn zo zonder zou zu zum zur zwar zwischen à às áestarían änderungen ça è ès é él éramos
ésta éstas éste éstos étaient étais était étant étante étantes étants étape état étiez étions été
étée étées étés êtes être êtreau última últimas último últimos über übernimm
""".split()
)

# General English words (stop-words package, BSD-3-Clause).
ENGLISH_COMMON = frozenset(
    """
a abaft able ableabout aboard about above abroad absent abst accordance according accordingly across
act actually ad added adj adopted ae af affected affecting affects afore after afterwards ag again
against ago ah ahead ai aint al all allow allows almost alone along alongside already also although
always am amid amidst among amongst amoungst amount an and anenst announce another any anybody
anyhow anymore anyone anything anyway anyways anywhere ao apart apparently appear appreciate
appropriate approximately apropos apud aq ar are area areas aren arent arise around arpa as aside
ask asked asking asks associated astride at athwart atop au auth available aw away awfully az b ba
back backed backing backs backward backwards barring bb bd be became because become becomes becoming
been before beforehand began begin beginning beginnings begins behind being beings believe below
beneath beside besides best better between beyond bf bg bh bi big bill billion biol bj bm bn bo both
bottom br brief briefly bs bt but buy bv bw by bz c ca call came can cannot cant caption case cases
cause causes cc cd certain certainly cf cg ch changes ci circa ck cl clear clearly click close cm
cmon cn co com come comes computer con concerning consequently consider considering contain
containing contains copy corresponding could couldn couldnt course cr cry cs cu currently cv cx cy
cz d dare darent date de dear definitely describe described despite detail did didn didnt differ
different differently directly dj dk dm do does doesn doesnt doing don done dont doubtful down
downed downing downs downwards due during dz e each early ec ed edu ee effect eg eh eight eighty
either eleven else elsewhere empty end ended ending ends enough entirely er es especially et etc
even evenly ever evermore every everybody everyone everything everywhere ex exactly example except
excluding f face faces fact facts failing fairly far farther felt few fewer ff fi fifteen fifth
fifty fify fill find finds fire first five fix fj fk fm fo followed following follows for forenenst
forever former formerly forth forty forward found four fr free from front full fully further
furthered furthering furthermore furthers fx g ga gave gb gd ge general generally get gets getting
gf gg gh gi give given gives giving gl gm gmt gn go goes going gone good goods got gotten gov gp gq
gr great greater greatest greetings group grouped grouping groups gs gt gu gw gy h had hadnt half
happens hardly has hasn hasnt have haven havent having he hed hell hello help hence her here
hereafter hereby herein heres hereupon hers herself hes hi hid high higher highest him himself his
hither hk hm hn home homepage hopefully how howbeit however hr ht htm html http hu hundred i id ie
if ignored ii il ill im immediate immediately importance important in inasmuch inc including indeed
index indicate indicated indicates information inner inside insofar instead int interest interested
interesting interests into invention inward io iq ir is isn isnt it itd itll its itself ive j je jm
jo join jp just k ke keep keeps kept keys kg kh ki kind km kn knew know known knows kp kr kw ky kz l
la large largely last lately later latest latter latterly lb lc least length less lest let lets li
like liked likely likewise line little lk ll long longer longest look looking looks low lower lr ls
lt ltd lu lv ly m ma made mainly make makes making man many may maybe maynt mc md me mean means
meantime meanwhile member members men merely mg mh microsoft mid midst might mightnt mil mill
million mine minus miss mk ml mm mn mo modulo more moreover most mostly move mp mq mr mrs ms msie mt
mu much mug must mustnt mv mw mx my myself mz n na name namely nay nc nd ne near nearly necessarily
necessary need needed needing neednt needs neither net netscape never neverf neverless nevertheless
new newer newest next nf ng ni nine ninety nl no nobody non none nonetheless noone nor normally nos
not noted nothing notwithstanding novel now nowhere np nr nu null number numbers nz o obtain
obtained obviously of off often oh ok okay old older oldest om omitted on once one ones only onto
open opened opening opens opposite or ord order ordered ordering orders org other others otherwise
ought oughtnt our ours ourselves out outside over overall owing own p pa page pages part parted
particular particularly parting parts past pe per perhaps pf pg ph pk pl place placed places please
plus pm pmid pn point pointed pointing points poorly possible possibly potentially pp pr
predominantly present presented presenting presents presumably previously primarily prior pro
probably problem problems promptly proud provided provides pt pursuant put puts pw py q qa qua que
quickly quite qv r ran rather rd re readily really reasonably recent recently ref refs regarding
regardless regards related relatively research reserved respectively resulted resulting results
right ring ro room rooms round ru run rw s sa said same sans save saw say saying says sb sc sd se
sec second secondly seconds section see seeing seem seemed seeming seems seen sees self selves
sensible sent serious seriously seven seventy several sg sh shall shant she shed shell shes should
shouldn shouldnt show showed showing shown showns shows si side sides significant significantly
similar similarly since sincere site six sixty sj sk sl slightly sm small smaller smallest sn so
some somebody someday somehow someone somethan something sometime sometimes somewhat somewhere soon
sorry specifically specified specify specifying sr st state states still stop strongly su sub
subsequent substantially successfully such sufficiently suggest sup sure sv sy system sz t take
taken taking tc td tell ten tends terms test text tf tg th than thank thanks thanx that thatll thats
thatve the their theirs them themselves then thence there thereafter thereby thered therefore
therein therell thereof therere theres thereto thereupon thereve these they theyd theyll theyre
theyve thick thin thing things think thinks third thirty this thorough thoroughly those thou though
thoughh thought thoughts thousand three throug through throughout thru thruout thus til till tip tis
tj tk tm tn to today together too took top toward towards tp tr tried tries trillion truly try
trying ts tt turn turned turning turns tv tw twas twelve twenty twice two tz u ua ug uk um un under
underneath undoing unfortunately unless unlike unlikely until unto up upon ups upwards us use used
useful usefully usefulness uses using usually uucp uy uz v va value various vc ve versus very vg vi
via vice viz vn vol vols vs vu w want wanted wanting wants was wasn wasnt way ways we web webpage
website wed welcome well wells went were weren werent weve wf what whatever whatll whats whatve when
whence whenever where whereafter whereas whereby wherein wheres whereupon wherever whether which
whichever while whilst whim whither who whod whoever whole wholl whom whomever whos whose why widely
width will willing wish with within without won wonder wont words work worked working works world
wortha would wouldn wouldnt ws www x y ye year years yes yet you youd youll young younger youngest
your youre yours yourself yourselves youve yt yu z za zero zm zr
""".split()
)
