/**
 * The skills of a home (docs/launch.md, "Skills"): `<home>/skills/<name>/SKILL.md`, a Markdown file
 * that opens with a YAML front matter giving `name` (the folder's name) and `description`. Read by
 * `gatehouse skills` and by `session.create` (`skills`, and the list offered to the model).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { SkillDocument, SkillSummary } from '../domain/local/launch-context.js';

const SKILL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
/** A description longer than this says too much for a list; the model reads the file for more. */
const DESCRIPTION_MAX = 500;
/** A SKILL.md larger than this is not read at all (the frozen prompt caps a skill far below it). */
const FILE_MAX_BYTES = 1024 * 1024;

export function skillsDir(homeRoot: string): string {
  return path.join(homeRoot, 'skills');
}

/** A skill folder that could not be read as a skill, and why (shown by `gatehouse skills`). */
export interface SkillProblem {
  path: string;
  problem: string;
}

/** Parses SKILL.md text; a string is the problem with it. */
export function parseSkill(folder: string, file: string, text: string): SkillDocument | string {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) return 'it does not open with a front matter (--- name: … description: … ---)';
  let front: unknown;
  try {
    front = parse(match[1]!);
  } catch {
    return 'its front matter is not valid YAML';
  }
  const fields = (front ?? {}) as Record<string, unknown>;
  const name = fields['name'];
  const description = fields['description'];
  if (typeof name !== 'string' || name.trim() === '') return 'its front matter has no name';
  if (name.trim() !== folder) return `its front matter names "${name.trim()}", not its folder "${folder}"`;
  if (typeof description !== 'string' || description.trim() === '')
    return 'its front matter has no description';
  return {
    name: folder,
    description: description.trim().replace(/\s+/g, ' ').slice(0, DESCRIPTION_MAX),
    path: file,
    body: match[2]!,
  };
}

function readSkillFile(homeRoot: string, name: string): SkillDocument | string | null {
  if (!SKILL_NAME.test(name) || name.includes('..')) return null;
  const file = path.join(skillsDir(homeRoot), name, 'SKILL.md');
  let text: string;
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) return null;
    if (stat.size > FILE_MAX_BYTES) return `it is larger than ${FILE_MAX_BYTES} bytes`;
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  return parseSkill(name, file, text);
}

/** The named skill, or null when the home has no readable skill of that name. */
export function readSkill(homeRoot: string, name: string): SkillDocument | null {
  const skill = readSkillFile(homeRoot, name);
  return typeof skill === 'object' ? skill : null;
}

/** Every skill of the home by name, and the folders that are not valid skills. */
export function listSkills(homeRoot: string): { skills: SkillSummary[]; problems: SkillProblem[] } {
  let entries: string[];
  try {
    entries = fs.readdirSync(skillsDir(homeRoot)).sort();
  } catch {
    return { skills: [], problems: [] };
  }
  const skills: SkillSummary[] = [];
  const problems: SkillProblem[] = [];
  for (const name of entries) {
    const folder = path.join(skillsDir(homeRoot), name);
    if (!fs.statSync(folder, { throwIfNoEntry: false })?.isDirectory()) continue;
    const skill = readSkillFile(homeRoot, name);
    if (skill === null) {
      problems.push({
        path: folder,
        problem: SKILL_NAME.test(name)
          ? 'it has no SKILL.md'
          : 'its name is not a skill name (letters, digits, _, . and -)',
      });
    } else if (typeof skill === 'string') {
      problems.push({ path: path.join(folder, 'SKILL.md'), problem: skill });
    } else {
      skills.push({ name: skill.name, description: skill.description, path: skill.path });
    }
  }
  return { skills, problems };
}
