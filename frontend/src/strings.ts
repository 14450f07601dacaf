// The card's words in English and Simplified Chinese, chosen by the user's HA language.

const en = {
  idle: "idle",
  listening: "listening",
  thinking: "thinking",
  speaking: "speaking",
  recognised: "heard {person}",
  face: "{name} is {state}, {emotion}",
  subtitles: "What {name} says",
  tools: "Running",
  held: "Waiting for your approval",
  held_action: "{tool} on {targets}",
  held_target: "{action} {target}",
  expires: "expires in {seconds} s",
  approve: "Approve",
  deny: "Deny",
  approve_label: "Approve: {what}",
  deny_label: "Deny: {what}",
  memories: "What {name} remembers for the household",
  no_memories: "Nothing remembered yet.",
  memory_off: "Memory is off.",
  forget: "Forget",
  forget_label: "Forget: {what}",
  no_entity: "Choose a persona (a Companion Agent conversation entity).",
  not_found: "{entity} is not a loaded Companion Agent persona.",
  failed: "That did not work: {error}",
  missed: "Some updates were missed.",
  status_running: "running",
  status_completed: "done",
  status_error: "failed",
  status_pending_confirmation: "waiting",
  entity: "Persona",
  satellite: "Satellite or media player",
  show_subtitles: "Show subtitles",
  show_tools: "Show tool calls",
  show_confirmations: "Show held actions",
  show_memories: "Show household memories",
  card_name: "Companion",
  card_description: "The companion's face, live subtitles, held actions and memories.",
};

export type StringKey = keyof typeof en;

const zhHans: Record<StringKey, string> = {
  idle: "空闲",
  listening: "在听",
  thinking: "在想",
  speaking: "在说",
  recognised: "听出是{person}",
  face: "{name}{state}，{emotion}",
  subtitles: "{name}说的话",
  tools: "正在执行",
  held: "等待你的批准",
  held_action: "{targets}：{tool}",
  held_target: "{target}：{action}",
  expires: "{seconds} 秒后过期",
  approve: "批准",
  deny: "拒绝",
  approve_label: "批准：{what}",
  deny_label: "拒绝：{what}",
  memories: "{name}为全家记住的事",
  no_memories: "还没有记住任何事。",
  memory_off: "记忆已关闭。",
  forget: "忘记",
  forget_label: "忘记：{what}",
  no_entity: "请选择一个角色（Companion Agent 的对话实体）。",
  not_found: "{entity} 不是已加载的 Companion Agent 角色。",
  failed: "没有成功：{error}",
  missed: "漏掉了一些更新。",
  status_running: "执行中",
  status_completed: "完成",
  status_error: "失败",
  status_pending_confirmation: "等待中",
  entity: "角色",
  satellite: "语音卫星或媒体播放器",
  show_subtitles: "显示字幕",
  show_tools: "显示工具调用",
  show_confirmations: "显示待批准的操作",
  show_memories: "显示全家的记忆",
  card_name: "陪伴助手",
  card_description: "陪伴助手的表情、实时字幕、待批准的操作和记忆。",
};

const emotionNames: Record<"en" | "zh-Hans", Record<string, string>> = {
  en: {},
  "zh-Hans": {
    neutral: "平静",
    joy: "开心",
    happy: "开心",
    sad: "难过",
    angry: "生气",
    surprise: "惊讶",
    surprised: "惊讶",
    fear: "害怕",
    shy: "害羞",
    love: "喜爱",
    excited: "兴奋",
    calm: "平静",
    tired: "疲倦",
    confused: "困惑",
    think: "思考",
    proud: "自豪",
    worried: "担心",
  },
};

export type Language = "en" | "zh-Hans";

export function pickLanguage(tag: string | undefined): Language {
  const lower = (tag ?? "en").toLowerCase();
  if (lower === "zh" || lower.startsWith("zh-hans") || lower === "zh-cn" || lower === "zh-sg") {
    return "zh-Hans";
  }
  return "en";
}

export function localize(
  language: Language,
  key: StringKey,
  values: Record<string, string | number> = {},
): string {
  const table = language === "zh-Hans" ? zhHans : en;
  return table[key].replace(/\{(\w+)\}/g, (_all, name: string) => String(values[name] ?? ""));
}

export function emotionName(language: Language, emotion: string): string {
  return emotionNames[language][emotion] ?? emotion;
}
