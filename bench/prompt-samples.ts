// Prompt texts in several languages and forms, written for bench/prompt-estimate.ts: what the
// gateway's token estimate is checked against a real tokenizer on.
export const PROMPT_SAMPLES: Readonly<Record<string, string>> = {
  english:
    'Our nightly backup job started failing last Tuesday with SlowDown errors from the object ' +
    'store. Nothing in the job changed, but the number of files grew from about two million to ' +
    'nearly five million after the analytics team began writing hourly partitions. Each run now ' +
    'lists the whole bucket before it uploads anything, and the listing alone takes forty ' +
    'minutes. Could the request rate be the cause, and what would you change first: the ' +
    'listing, the upload concurrency, or the layout of the keys? Please explain the trade-offs ' +
    'and suggest a plan we can roll out this week without losing a night of backups.',
  german:
    'Unser nächtliches Backup schlägt seit letztem Dienstag mit SlowDown-Fehlern des ' +
    'Objektspeichers fehl. Am Job selbst hat sich nichts geändert, aber die Zahl der Dateien ist ' +
    'von etwa zwei Millionen auf fast fünf Millionen gewachsen, seit das Analyseteam stündliche ' +
    'Partitionen schreibt. Könnte die Anfragerate die Ursache sein, und was würden Sie zuerst ' +
    'ändern: die Auflistung, die Parallelität der Uploads oder die Struktur der Schlüssel?',
  spanish:
    'Nuestra copia de seguridad nocturna empezó a fallar el martes pasado con errores SlowDown ' +
    'del almacenamiento de objetos. El trabajo no cambió, pero el número de archivos pasó de ' +
    'unos dos millones a casi cinco millones cuando el equipo de análisis empezó a escribir ' +
    'particiones cada hora. ¿Podría ser la tasa de peticiones la causa, y qué cambiaría primero: ' +
    'el listado, la concurrencia de las subidas o la estructura de las claves?',
  code:
    'export function retryDelayMs(attempt: number, baseMs = 500, capMs = 30_000): number {\n' +
    '  // Full jitter: a uniform draw up to the capped exponential backoff.\n' +
    '  const ceiling = Math.min(capMs, baseMs * 2 ** attempt);\n' +
    '  return Math.floor(Math.random() * ceiling);\n' +
    '}\n\n' +
    'async function upload(keys: string[], put: (k: string) => Promise<void>) {\n' +
    '  for (const [i, key] of keys.entries()) {\n' +
    '    for (let attempt = 0; ; attempt++) {\n' +
    '      try {\n' +
    '        await put(key);\n' +
    '        break;\n' +
    '      } catch (e) {\n' +
    "        if (attempt >= 5 || !(e instanceof Error) || e.name !== 'SlowDown') throw e;\n" +
    '        await new Promise((r) => setTimeout(r, retryDelayMs(attempt)));\n' +
    '      }\n' +
    '    }\n' +
    '    if (i % 1000 === 0) console.log(`uploaded ${i} of ${keys.length}`);\n' +
    '  }\n' +
    '}\n',
  json:
    '{"type":"function","function":{"name":"get_weather","description":"Get the current ' +
    'weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string",' +
    '"description":"The city, e.g. Lisbon"},"unit":{"type":"string","enum":["celsius",' +
    '"fahrenheit"]}},"required":["city"]}}}',
  chinese:
    '我们的夜间备份任务从上周二开始失败，对象存储返回了大量的降速错误。任务本身没有任何改动，' +
    '但是自从分析团队开始按小时写入分区以后，文件数量从大约两百万增长到了将近五百万。现在每次运行' +
    '都要先列出整个存储桶，仅仅列出文件就需要四十分钟。请问请求速率会不会是原因？如果要改，应该先' +
    '改哪一部分：文件列表、上传的并发数，还是键的布局？请解释各自的利弊，并给出一个本周就能上线、' +
    '而且不会漏掉任何一晚备份的方案。',
  japanese:
    '夜間バックアップのジョブが先週の火曜日から、オブジェクトストレージのスローダウンエラーで失敗する' +
    'ようになりました。ジョブ自体は何も変えていませんが、分析チームが一時間ごとのパーティションを書き' +
    '始めてから、ファイル数が約二百万から五百万近くまで増えました。リクエストのレートが原因でしょうか。' +
    'まず何を変えるべきでしょうか：一覧の取得、アップロードの並列数、それともキーの構成でしょうか。',
  korean:
    '야간 백업 작업이 지난 화요일부터 객체 스토리지의 속도 저하 오류로 실패하기 시작했습니다. 작업 ' +
    '자체는 바뀐 것이 없지만, 분석 팀이 매시간 파티션을 쓰기 시작한 뒤로 파일 수가 약 이백만 개에서 ' +
    '거의 오백만 개로 늘어났습니다. 요청 속도가 원인일까요? 무엇을 먼저 바꿔야 할까요: 목록 조회, ' +
    '업로드 동시성, 아니면 키의 구조일까요?',
  russian:
    'Наше ночное резервное копирование с прошлого вторника завершается ошибками SlowDown от ' +
    'объектного хранилища. В самом задании ничего не менялось, но после того как аналитики начали ' +
    'записывать почасовые разделы, число файлов выросло примерно с двух миллионов почти до пяти. ' +
    'Может ли причиной быть частота запросов, и что бы вы изменили в первую очередь: получение ' +
    'списка, число параллельных загрузок или структуру ключей?',
  arabic:
    'بدأت مهمة النسخ الاحتياطي الليلية بالفشل منذ يوم الثلاثاء الماضي بسبب أخطاء التباطؤ من ' +
    'مخزن الكائنات. لم يتغير شيء في المهمة نفسها، لكن عدد الملفات ارتفع من نحو مليونين إلى ما ' +
    'يقارب خمسة ملايين بعد أن بدأ فريق التحليلات بكتابة أقسام كل ساعة. هل يمكن أن يكون معدل ' +
    'الطلبات هو السبب، وما الذي ينبغي تغييره أولا؟',
  hindi:
    'हमारा रात का बैकअप पिछले मंगलवार से ऑब्जेक्ट स्टोरेज की धीमा करने वाली त्रुटियों के कारण विफल हो ' +
    'रहा है। काम में कुछ भी नहीं बदला, लेकिन जब से विश्लेषण टीम ने हर घंटे के विभाजन लिखना शुरू ' +
    'किया है, फ़ाइलों की संख्या लगभग बीस लाख से बढ़कर लगभग पचास लाख हो गई है। क्या अनुरोधों की दर ' +
    'इसका कारण हो सकती है, और पहले क्या बदलना चाहिए?',
  emoji:
    'Thanks!! 🙏🙏 The fix worked 🎉🎉🎉 — backups are green again ✅✅. Next week: keys by day 📅, ' +
    'uploads at 32 at a time 🚀, and an alert when a run takes over an hour ⏰🔔. Anything else? 🤔',
};
