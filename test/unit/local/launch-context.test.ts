import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  capText,
  PROJECT_RULES_MAX_BYTES,
  renderAvailableSkills,
  renderProjectRules,
} from '../../../src/domain/local/launch-context.js';
import { projectRules, ruleDirectories } from '../../../src/daemon/launch-files.js';
import { parseSkill } from '../../../src/daemon/skills.js';

describe('the caps of the frozen prompt', () => {
  it('cuts on a character boundary and says how much was shown', () => {
    const text = 'é'.repeat(10); // 20 bytes
    expect(capText(text, 100, '/p')).toBe(text);
    expect(capText(text, 5, '/p')).toBe('éé\n\n[truncated: the first 4 of 20 bytes of /p are shown]');
    expect(capText('abc', 10, '/p', 5000)).toContain('the first 3 of 5000 bytes');
  });

  it('the project rules share one budget: files past it are named as left out', () => {
    const rendered = renderProjectRules([
      { path: '/r/AGENTS.md', text: 'a'.repeat(PROJECT_RULES_MAX_BYTES + 10) },
      { path: '/r/sub/AGENTS.md', text: 'inner' },
    ])!;
    expect(rendered).toContain(
      `[truncated: the first ${PROJECT_RULES_MAX_BYTES} of ${PROJECT_RULES_MAX_BYTES + 10} bytes of /r/AGENTS.md are shown]`,
    );
    expect(rendered).toContain('### /r/sub/AGENTS.md\n\n[left out: the project rules already fill their');
    expect(rendered).not.toContain('inner');
    expect(renderProjectRules([])).toBeNull();
    expect(renderAvailableSkills([])).toBeNull();
  });
});

describe('finding the project rules', () => {
  it('from cwd up to the repository root, outermost first, the first name present in each directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'gh-rules-'));
    mkdirSync(join(root, '.git'));
    const deep = join(root, 'a', 'b');
    mkdirSync(deep, { recursive: true });
    writeFileSync(join(root, 'AGENTS.md'), 'root');
    writeFileSync(join(root, 'CLAUDE.md'), 'root duplicate');
    writeFileSync(join(root, 'a', '.cursorrules'), 'middle');
    writeFileSync(join(deep, 'GEMINI.md'), 'deep');
    expect(ruleDirectories(deep)).toEqual([root, join(root, 'a'), deep]);
    expect(projectRules(deep).map((f) => [f.path, f.text])).toEqual([
      [join(root, 'AGENTS.md'), 'root'],
      [join(root, 'a', '.cursorrules'), 'middle'],
      [join(deep, 'GEMINI.md'), 'deep'],
    ]);
  });

  it('outside a repository only cwd itself is read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-norepo-'));
    expect(ruleDirectories(join(dir))).toEqual([dir]);
  });
});

describe('SKILL.md', () => {
  it('needs a front matter whose name is the folder, and a description', () => {
    expect(parseSkill('review', '/s', '---\nname: review\ndescription: Reviews\n---\nBody')).toEqual({
      name: 'review',
      description: 'Reviews',
      path: '/s',
      body: 'Body',
    });
    expect(parseSkill('review', '/s', 'Body')).toContain('does not open with a front matter');
    expect(parseSkill('review', '/s', '---\nname: other\ndescription: d\n---\n')).toContain('names "other"');
    expect(parseSkill('review', '/s', '---\nname: review\n---\n')).toContain('no description');
    expect(parseSkill('review', '/s', '---\nname: [\n---\n')).toContain('not valid YAML');
  });
});
