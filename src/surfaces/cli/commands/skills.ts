/** `gatehouse skills`: the skills of the home a session may name in `skills` (docs/launch.md). */
import { listSkills, skillsDir } from '../../../daemon/skills.js';
import { cliHome, note, say } from '../shared.js';

/** `gatehouse skills`: the home's skills as a table, or JSON. */
export function skills(options: { json?: boolean }): void {
  const root = cliHome().root;
  const { skills, problems } = listSkills(root);
  for (const p of problems) note(`${p.path} is not a skill: ${p.problem}`);
  if (options.json) {
    say(JSON.stringify(skills, null, 2));
    return;
  }
  if (skills.length === 0) {
    say(
      `no skills in ${skillsDir(root)}: add ${skillsDir(root)}/<name>/SKILL.md, opening with a front matter of name and description`,
    );
    return;
  }
  const nameWidth = Math.max(4, ...skills.map((s) => s.name.length));
  const descriptionWidth = Math.min(60, Math.max(11, ...skills.map((s) => s.description.length)));
  say(`${'NAME'.padEnd(nameWidth)}  ${'DESCRIPTION'.padEnd(descriptionWidth)}  PATH`);
  for (const s of skills) {
    const description =
      s.description.length > descriptionWidth
        ? `${s.description.slice(0, descriptionWidth - 1)}…`
        : s.description;
    say(`${s.name.padEnd(nameWidth)}  ${description.padEnd(descriptionWidth)}  ${s.path}`);
  }
}
