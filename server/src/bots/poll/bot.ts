import { AppError } from '../../domain/errors.js';
import type { BuiltinBot } from '../types.js';
import { POLL_USAGE, SURVEY_USAGE } from './parse.js';
import { closePoll, createPoll, JOB_CLOSE, JOB_PURGE, onPollAction, purgePoll } from './poll.js';
import { parseActionValue, parseSurveyActionValue } from './render.js';
import {
  closeSurvey,
  createSurvey,
  JOB_SURVEY_CLOSE,
  JOB_SURVEY_START,
  onSurveyAction,
  onSurveyReply,
  startSurvey,
} from './survey.js';

/**
 * The poll and survey bot (platform; docs/bots/POLL.md): `/poll` posts a
 * poll whose buttons update it live and whose result is posted when it closes; `/survey` asks the
 * members of a channel questions by DM and sends its creator a summary. Using either command in a
 * channel adds the bot there (docs/BUILTIN-BOTS.md); it acts only through operations, as itself.
 */

const HELP = [
  '**/poll** — a poll with buttons, updated live; the result is posted when it closes:',
  `\`${POLL_USAGE}\``,
  '- 2 to 10 options; `--multiple`: any number of options per voter; `--anonymous`: names are not shown;',
  '  `--closes`: 1m to 30d (e.g. 30m, 2h, 1d); without it the poll stays open until its creator closes it (30 days at most).',
  '**/survey** — questions asked by DM to every member of this channel; you get a summary when it closes:',
  `\`${SURVEY_USAGE}\``,
  '- 1 to 10 questions; `[A|B|C]` after a question makes it a choice with buttons; `--closes` 1m to 30d (default 1d).',
].join('\n');

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export const pollBot: BuiltinBot = {
  key: 'poll',
  type: 'platform',
  name: 'Polls',
  description: 'Polls with live buttons (/poll) and surveys answered by DM (/survey)',
  // Replies in DMs are survey answers (message events elsewhere are ignored at once).
  events: ['message.created'],
  commands: [
    {
      name: 'poll',
      description: 'Post a poll with buttons; votes update it live, the result is posted when it closes',
      usage: POLL_USAGE,
    },
    {
      name: 'survey',
      description: 'Ask the members of this channel questions by DM; you get a summary when it closes',
      usage: SURVEY_USAGE,
    },
  ],
  scopes: ['messages:write', 'channels:read', 'users:read'],

  async onCommand(ctx, cmd) {
    const args = cmd.args.trim();
    if (args === '' || args.toLowerCase() === 'help') return { content: HELP, ephemeral: true };
    if (cmd.command === 'poll') {
      await createPoll(ctx, cmd);
      return null; // the poll message is the answer
    }
    if (cmd.command === 'survey') return { content: await createSurvey(ctx, cmd), ephemeral: true };
    throw new AppError('not_found', `Unknown command /${cmd.command}`);
  },

  async onAction(ctx, action) {
    const survey = parseSurveyActionValue(action.value);
    if (survey) return onSurveyAction(ctx, action, survey);
    const poll = parseActionValue(action.value);
    if (poll) return onPollAction(ctx, action, poll.pollId, poll.what);
  },

  async onEvent(ctx, event) {
    if (event.type === 'message.created' && typeof event.data.dm_room_id === 'string') {
      await onSurveyReply(ctx, event);
    }
  },

  async onJob(ctx, job) {
    const pollId = str(job.payload.poll_id);
    const surveyId = str(job.payload.survey_id);
    if (job.kind === JOB_CLOSE && pollId) await closePoll(ctx, pollId, 'time');
    else if (job.kind === JOB_PURGE && pollId) await purgePoll(ctx, pollId);
    else if (job.kind === JOB_SURVEY_START && surveyId) await startSurvey(ctx, surveyId);
    else if (job.kind === JOB_SURVEY_CLOSE && surveyId) await closeSurvey(ctx, surveyId);
    else ctx.log.warn({ kind: job.kind }, 'poll bot: a job of an unknown kind; ignored');
  },
};
