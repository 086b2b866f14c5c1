import { Parser, Language } from 'web-tree-sitter';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
await Parser.init();
const lang = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
const p = new Parser(); p.setLanguage(lang);
function dump(n, d=0){ let s='  '.repeat(d)+n.type+(n.childCount===0||n.type==='word'?' '+JSON.stringify(n.text):'')+(n.isMissing?' MISSING':'')+'\n'; if(n.type!=='word') for(const c of n.children) s+=dump(c,d+1); return s;}
for (const s of process.argv.slice(2)) { console.log('### '+s); console.log(dump(p.parse(s).rootNode)); }
