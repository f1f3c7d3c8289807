package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tree writes files (slash-separated path -> content) under a new folder
// and returns it: a source checkout in miniature.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// convertDir runs the named converter on root, writes its output into a
// new folder and returns the output folder and the result.
func convertDir(t *testing.T, name, root string) (string, *result) {
	t.Helper()
	c, ok := lookup(name)
	if !ok {
		t.Fatalf("no converter %q", name)
	}
	res, err := convert(c, root, "0123abcd")
	if err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	out := t.TempDir()
	if err := res.write(out); err != nil {
		t.Fatal(err)
	}
	return out, res
}

func readLines[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%s: %v in %s", path, err, line)
		}
		out = append(out, v)
	}
	return out
}

func toolNames(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func queryByID(t *testing.T, qs []Query, id string) Query {
	t.Helper()
	for _, q := range qs {
		if q.ID == id {
			return q
		}
	}
	t.Fatalf("no query %q in %v", id, qs)
	return Query{}
}

func aceSampleLine(id, question string, fns ...string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "question": question, "function": json.RawMessage("[" + strings.Join(fns, ",") + "]")})
	return string(b)
}

func fn(name, desc string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "description": desc,
		"parameters": map[string]any{"type": "dict", "properties": map[string]any{"city": map[string]any{"type": "str", "description": "City."}}, "required": []string{"city"}}})
	return string(b)
}

func aceFixture() map[string]string {
	d := "data_all/data_zh/"
	return map[string]string{
		d + "data_normal_single_turn_single_function.json": strings.Join([]string{
			aceSampleLine("single_0", "user: 北京今天天气怎么样？\n", fn("weather_now", "查询当前天气。"), fn("weather_week", "查询一周天气。")),
			// Same folded name, spelled otherwise, described otherwise: merged into the first.
			aceSampleLine("single_1", "user: 我想知道上海的天气。\nsystem: 请问哪一天？\nuser: 明天。\n", fn("WeatherNow", "另一种说法。")),
			// A label that names no offered tool: dropped and counted.
			aceSampleLine("single_2", "user: 帮我订机票。\n", fn("book_flight", "订机票。")),
		}, "\n") + "\n",
		d + "possible_answer/data_normal_single_turn_single_function.json": strings.Join([]string{
			`{"id": "single_0", "ground_truth": {"weather_now": {"city": "北京"}}}`,
			`{"id": "single_1", "ground_truth": [{"WeatherNow": {"city": "上海"}}]}`,
			`{"id": "single_2", "ground_truth": {"book_train": {"city": "x"}}}`,
		}, "\n") + "\n",
		d + "data_normal_single_turn_parallel_function.json": aceSampleLine("parallel_0",
			"user: 查一下北京和上海的天气，再记下来。\nsystem: [weather_now(city='北京')]\nuser: 好。\n", fn("weather_now", "查询当前天气。"), fn("note_add", "记笔记。")) + "\n",
		d + "possible_answer/data_normal_single_turn_parallel_function.json": `{"id": "parallel_0", "ground_truth": {"weather_now_1": {"city": "北京"}, "weather_now_2": {"city": "上海"}, "note_add": {"city": "x"}}}` + "\n",
		d + "data_special_irrelevant.json":                                   aceSampleLine("irrelevant_0", "user: 讲个笑话。\n", fn("stock_price", "查询股价。")) + "\n",
		d + "data_agent_multi_step.json":                                     aceSampleLine("agent_0", "你是Eve……", fn("login_device", "登录设备。")) + "\n",
		d + "possible_answer/data_agent_multi_step.json":                     `{"id": "agent_0", "ground_truth": [{"BaseApi": {}}]}` + "\n",
	}
}

func TestACEBench(t *testing.T) {
	out, res := convertDir(t, "acebench-zh", tree(t, aceFixture()))
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	// Sorted, one per folded name, the irrelevant sample's tool kept as a
	// distractor, the agent file not read.
	if got, want := toolNames(tools), []string{"book_flight", "note_add", "stock_price", "weather_now", "weather_week"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	var params map[string]any
	if err := json.Unmarshal(tools[3].Parameters, &params); err != nil {
		t.Fatal(err)
	}
	if params["type"] != "object" || params["properties"].(map[string]any)["city"].(map[string]any)["type"] != "string" {
		t.Errorf("parameters not mapped to JSON Schema: %s", tools[3].Parameters)
	}
	if tools[3].Description != "查询当前天气。" {
		t.Errorf("first definition not kept: %q", tools[3].Description)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	if len(qs) != 3 {
		t.Fatalf("%d queries, want 3 (single_2 dropped): %v", len(qs), qs)
	}
	if q := queryByID(t, qs, "single_1"); q.Query != "我想知道上海的天气。\n明天。" || !reflect.DeepEqual(q.Tools, []string{"weather_now"}) || q.Lang != "zh" {
		t.Errorf("single_1 = %+v: want the user turns only and the label in the kept spelling", q)
	}
	if q := queryByID(t, qs, "parallel_0"); strings.Contains(q.Query, "weather_now(") || !reflect.DeepEqual(q.Tools, []string{"weather_now", "note_add"}) {
		t.Errorf("parallel_0 = %+v: want no system line and numbered labels folded into one", q)
	}
	st := res.set.Stats
	if st.Spellings != 1 || st.Redefined != 1 || st.NumberedLabels != 2 || st.UnresolvedLabels != 1 || st.DroppedQueries != 1 {
		t.Errorf("stats %+v", st)
	}
	if st.Skipped["special_irrelevant: no tool fits"] != 1 || st.Skipped["agent samples: no labelled calls"] != 1 {
		t.Errorf("skipped %v", st.Skipped)
	}
	if !reflect.DeepEqual(res.set.Unknown, []string{"single_2: book_train"}) {
		t.Errorf("unknown %v", res.set.Unknown)
	}
	readme, _ := os.ReadFile(filepath.Join(out, "README.md"))
	for _, want := range []string{"https://github.com/ACEBench/ACEBench", "MIT", "0123abcd", "1 unresolvable, so 1 queries dropped", "data_normal_single_turn_single_function.json`"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("README lacks %q:\n%s", want, readme)
		}
	}
}

func TestDeterministic(t *testing.T) {
	root := tree(t, aceFixture())
	a, _ := convertDir(t, "acebench-zh", root)
	b, _ := convertDir(t, "acebench-zh", root)
	for _, f := range []string{"tools.jsonl", "queries.jsonl", "README.md"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs on the same source", f)
		}
	}
}

func TestAPIBank(t *testing.T) {
	csv := "id,类型,应用场景,API名称,参数,路径,类名,input_parameters,expressions,api_info\n" +
		"1,x,y,z,p,apis/get_user_token.py,GetUserToken,\"(username: str)\",e,\"description = \"\"Get the user's token.\"\"\ninput_parameters = {\n    'username': {'type': 'str', 'description': 'The user\\'s name.'},\n    'when': {'type': 'datetime', 'description': \"\"Time, as 'YYYY'.\"\"},\n}\noutput_parameters = {\n    'token': {'type': 'str', 'description': 'Not an input.'}\n}\"\n" +
		"2,x,y,z,p,apis/image_caption.py,ImageCaption,(),e,.\n" +
		"3,x,y,z,p,apis/add_alarm.py,AddAlarm,(),e,\"description = 'Add an alarm.'\ninput_parameters = None\"\n"
	py := "class ImageCaption(API):\n    description = 'Caption an image.'\n    input_parameters = {\n        \"url\": {'type': 'str', 'description': 'Image URL.'},\n    }\n    output_parameters = {\n        \"caption\": {'type': 'str', 'description': 'Not an input.'},\n    }\n"
	dlg := func(turns ...string) string { return strings.Join(turns, "\n") + "\n" }
	root := tree(t, map[string]string{
		"api-bank/data/all_apis.csv":          csv,
		"api-bank/apis/image_caption.py":      py,
		"api-bank/apis/unrelated_not_read.py": "class Other(API):\n    description = 'x'\n",
		"api-bank/lv1-lv2-samples/level-1-given-desc/AddAlarm-level-1-1.jsonl": dlg(
			`{"role": "User", "text": "Wake me at 7."}`,
			`{"role": "AI", "text": "Your user name?"}`,
			`{"role": "User", "text": "jane"}`,
			`{"role": "API", "api_name": "GetUserToken", "param_dict": {}}`,
			`{"role": "API", "api_name": "AddAlarm", "param_dict": {}}`,
			`{"role": "User", "text": "Thanks!"}`),
		"api-bank/lv1-lv2-samples/level-2-toolsearcher/ImageCaption-level-3-1.jsonl": dlg(
			`{"role": "User", "text": "What is in this picture?"}`,
			`{"role": "API", "api_name": "ToolSearcher", "param_dict": {"keywords": "image caption"}}`,
			`{"role": "API", "api_name": "ImageCaption", "param_dict": {}}`),
		"api-bank/lv1-lv2-samples/level-2-toolsearcher/Chat-level-3-1.jsonl": dlg(`{"role": "User", "text": "Hello"}`, `{"role": "AI", "text": "Hi"}`),
	})
	out, res := convertDir(t, "api-bank", root)
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if got, want := toolNames(tools), []string{"AddAlarm", "GetUserToken", "ImageCaption"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	var tok struct {
		Properties map[string]struct{ Type, Format, Description string }
	}
	if err := json.Unmarshal(tools[1].Parameters, &tok); err != nil {
		t.Fatal(err)
	}
	if tools[1].Description != "Get the user's token." || len(tok.Properties) != 2 ||
		tok.Properties["username"].Description != "The user's name." || tok.Properties["when"].Type != "string" || tok.Properties["when"].Format != "datetime" {
		t.Errorf("GetUserToken = %+v %s", tools[1], tools[1].Parameters)
	}
	if !strings.Contains(string(tools[2].Parameters), `"url"`) || strings.Contains(string(tools[2].Parameters), "caption") || tools[2].Description != "Caption an image." {
		t.Errorf("ImageCaption from its .py = %+v %s", tools[2], tools[2].Parameters)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	want := []Query{
		{Query: "Wake me at 7.\njane", Tools: []string{"GetUserToken", "AddAlarm"}, ID: "AddAlarm-level-1-1", Split: "level-1-given-desc", Lang: "en"},
		{Query: "What is in this picture?", Tools: []string{"ImageCaption"}, ID: "ImageCaption-level-3-1", Split: "level-2-toolsearcher", Lang: "en"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("queries\n%+v\nwant\n%+v", qs, want)
	}
	if res.set.Stats.Skipped["dialogue with no API call"] != 1 {
		t.Errorf("skipped %v", res.set.Stats.Skipped)
	}
	for _, f := range res.files {
		if strings.Contains(f.Path, "unrelated") {
			t.Errorf("read %s, which it does not need", f.Path)
		}
	}
}

func TestCallNavi(t *testing.T) {
	schema := func(names ...string) string {
		var fns []string
		for _, n := range names {
			fns = append(fns, `{"name": "`+n+`", "description": "Does `+n+`.", "parameters": {"$schema": "http://json-schema.org/schema#", "type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}`)
		}
		return "[" + strings.Join(fns, ",") + "]"
	}
	root := tree(t, map[string]string{
		"Dataset/APISchema/bank.json":    schema("getAccountDetails", "getBalance"),
		"Dataset/APISchema/telecom.json": schema("get_account_details", "getPlan"),
		"Dataset/Questions/bank.json": `[
			{"id": "b1", "question": [{"role": "user", "content": "Show account 1."}], "ground_truth": {"API": ["getAccountDetails"]}, "difficulty": "easy"},
			{"id": "b2", "question": [{"role": "user", "content": "Balance and details of 2."}], "ground_truth": {"API": ["getBalance", "getAccountDetails", "getBalance"]}, "difficulty": "hard"},
			{"id": "b3", "question": [{"role": "user", "content": "Close it."}], "ground_truth": {"API": ["closeAccount"]}, "difficulty": "easy"}]`,
		"Dataset/Questions/telecom.json": `[{"id": "t1", "question": [{"role": "user", "content": "My phone account."}], "ground_truth": {"API": ["get_account_details"]}, "difficulty": "medium"}]`,
	})
	out, res := convertDir(t, "callnavi", root)
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if got, want := toolNames(tools), []string{"bank_getAccountDetails", "getBalance", "getPlan", "telecom_get_account_details"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if strings.Contains(string(tools[0].Parameters), "$schema") {
		t.Errorf("$schema kept: %s", tools[0].Parameters)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	if len(qs) != 3 {
		t.Fatalf("queries %+v", qs)
	}
	if q := queryByID(t, qs, "b2"); !reflect.DeepEqual(q.Tools, []string{"getBalance", "bank_getAccountDetails"}) || q.Split != "bank/hard" {
		t.Errorf("b2 = %+v", q)
	}
	if q := queryByID(t, qs, "t1"); !reflect.DeepEqual(q.Tools, []string{"telecom_get_account_details"}) {
		t.Errorf("t1 = %+v", q)
	}
	if res.set.Stats.Renamed != 2 || res.set.Stats.DroppedQueries != 1 {
		t.Errorf("stats %+v", res.set.Stats)
	}
}

func TestNesTools(t *testing.T) {
	task := func(id int, text string, apis []string, calls ...string) string {
		var as, cs []string
		for _, a := range apis {
			as = append(as, `{"api_name": "`+a+`", "api_description": "Does `+a+`.", "parameters": {"x": {"type": "int", "description": "X."}}, "required": ["x"], "responses": {"y": {"type": "str"}}}`)
		}
		for _, c := range calls {
			cs = append(cs, `{"api_name": "`+c+`", "parameters": {}, "responses": []}`)
		}
		b, _ := json.Marshal(map[string]any{"test_id": id, "task": text, "field": "Library/AR",
			"api": json.RawMessage("[" + strings.Join(as, ",") + "]"), "call": json.RawMessage("[" + strings.Join(cs, ",") + "]")})
		return string(b)
	}
	root := tree(t, map[string]string{"data/test_data.jsonl": strings.Join([]string{
		task(1, "Scan the book, then locate it.", []string{"scan_isbn", "locate_book"}, "scan_isbn", "locate_book", "scan_isbn"),
		task(2, "Locate the book.", []string{"locate-book"}, "locate-book"),
		task(3, "  ", []string{"noop"}, "noop"),
	}, "\n")})
	out, res := convertDir(t, "nestools", root)
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if got, want := toolNames(tools), []string{"locate_book", "noop", "scan_isbn"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if p := string(tools[2].Parameters); !strings.Contains(p, `"type":"integer"`) || !strings.Contains(p, `"required":["x"]`) || strings.Contains(p, "responses") {
		t.Errorf("parameters %s", p)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	want := []Query{
		{Query: "Scan the book, then locate it.", Tools: []string{"scan_isbn", "locate_book"}, ID: "1", Split: "test_data", Lang: "en"},
		{Query: "Locate the book.", Tools: []string{"locate_book"}, ID: "2", Split: "test_data", Lang: "en"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("queries\n%+v\nwant\n%+v", qs, want)
	}
	if res.set.Stats.Spellings != 1 || res.set.Stats.Skipped["empty request"] != 1 {
		t.Errorf("stats %+v", res.set.Stats)
	}
}

// TestBadSource tries what a careless user gives: the wrong folder, a
// broken file, an unknown set. Each is a clear error, and nothing is
// written.
func TestBadSource(t *testing.T) {
	fx := aceFixture()
	fx["data_all/data_zh/possible_answer/data_normal_single_turn_parallel_function.json"] = "{not json\n"
	broken := tree(t, fx)
	noAnswers := aceFixture()
	delete(noAnswers, "data_all/data_zh/possible_answer/data_normal_single_turn_parallel_function.json")
	cases := []struct {
		name, set, root, want string
	}{
		{"wrong folder", "acebench-zh", t.TempDir(), "is -from the root of the source repository's checkout"},
		{"not a folder", "callnavi", filepath.Join(broken, "data_all/data_zh/data_special_irrelevant.json"), "is not a folder"},
		{"broken line", "acebench-zh", broken, "data_normal_single_turn_parallel_function.json:1"},
		{"answers missing", "acebench-zh", tree(t, noAnswers), "possible_answer/data_normal_single_turn_parallel_function.json not found"},
		{"api-bank without csv", "api-bank", tree(t, map[string]string{"api-bank/README.md": "x"}), "all_apis.csv not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			var stdout, stderr bytes.Buffer
			code := run([]string{"-from", c.root, "-set", c.set, "-out", out}, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), c.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("output written after an error")
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-from", broken, "-set", "nope", "-out", t.TempDir()}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "acebench-zh") {
		t.Errorf("unknown set: exit %d, %q", code, stderr.String())
	}
	if code := run([]string{"-set", "callnavi"}, &stdout, &stderr); code != 2 {
		t.Errorf("missing flags: exit %d", code)
	}
	stdout.Reset()
	if code := run([]string{"-list"}, &stdout, &stderr); code != 0 || strings.Count(stdout.String(), "\n") != len(converters()) {
		t.Errorf("-list: exit %d, %q", code, stdout.String())
	}
}

// TestCheck feeds Check what a hand-edited set could hold.
func TestCheck(t *testing.T) {
	tools := []Tool{{Name: "get_weather"}, {Name: "send_mail"}}
	cases := []struct {
		name    string
		tools   []Tool
		queries []Query
		want    string
	}{
		{"fold clash", append(tools, Tool{Name: "GetWeather"}), nil, "fold to the same name"},
		{"label unknown", tools, []Query{{Query: "q", Tools: []string{"get-weather"}, ID: "1"}}, `names no tool`},
		{"empty query", tools, []Query{{Query: " ", Tools: []string{"send_mail"}, ID: "1"}}, "empty request"},
		{"no label", tools, []Query{{Query: "q", ID: "1"}}, "no label"},
		{"repeated id", tools, []Query{{Query: "a", Tools: []string{"send_mail"}, ID: "1"}, {Query: "b", Tools: []string{"send_mail"}, ID: "1"}}, "repeated"},
	}
	for _, c := range cases {
		if err := Check(c.tools, c.queries); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := Check(tools, []Query{{Query: "q", Tools: []string{"send_mail"}, ID: "1"}}); err != nil {
		t.Errorf("valid set: %v", err)
	}
	names := []Tool{{Name: "get_weather"}, {Name: "math.factorial"}, {Name: "5G_plan"}, {Name: "天气"}, {Name: strings.Repeat("a", 65)}, {Name: "Send-Mail"}}
	if got := unloadableNames(names); len(got) != 4 || got[0] != "math.factorial" {
		t.Errorf("unloadable names %v", got)
	}
}

func TestToolEyes(t *testing.T) {
	root := tree(t, map[string]string{
		"Tool_Library/Random/Random/config_gpt4.json": `[{"name": "get_uuid", "description": "Return a UUID.", "parameters": {"type": "object", "properties": {}}},
			{"name": "generate_string", "description": "Return a  random\nstring.", "parameters": {}}]`,
		"Tool_Library/Finance/Yelp/config_gpt4.json": `[{"name": "yelp_search", "description": "Find businesses.", "parameters": {}}]`,
		"Tool_Library/Finance/Yelp/helper.py":        "not read",
		"Test_Data/scenario_data_raw.json": `[
			{"query": "Six UUIDs, please.", "path": "ToolEyes/Tool_Library/Random/Random", "scenario": "TG"},
			{"query": "A taco place near me?", "path": "ToolEyes/Tool_Library/Finance/Yelp/", "scenario": "PL"},
			{"query": "Book me a train.", "path": "ToolEyes/Tool_Library/Travel/Railway", "scenario": "PL"}]`,
	})
	out, res := convertDir(t, "tooleyes", root)
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if got, want := toolNames(tools), []string{"Random", "Yelp"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if tools[0].Description != "get_uuid: Return a UUID. generate_string: Return a random string." {
		t.Errorf("toolkit description %q", tools[0].Description)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	want := []Query{
		{Query: "Six UUIDs, please.", Tools: []string{"Random"}, ID: "TG/1", Split: "TG", Lang: "en"},
		{Query: "A taco place near me?", Tools: []string{"Yelp"}, ID: "PL/1", Split: "PL", Lang: "en"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("queries\n%+v\nwant\n%+v", qs, want)
	}
	if !reflect.DeepEqual(res.set.Unknown, []string{"PL/2: Railway"}) {
		t.Errorf("unknown %v", res.set.Unknown)
	}
}

func TestSGD(t *testing.T) {
	svc := func(name, intentDesc string) string {
		return `{"service_name": "` + name + `", "description": "Find and book restaurants",
			"slots": [{"name": "city", "description": "City of the restaurant", "is_categorical": false, "possible_values": []},
			          {"name": "price", "description": "Price range", "is_categorical": true, "possible_values": ["cheap", "pricey"]}],
			"intents": [{"name": "ReserveRestaurant", "description": "` + intentDesc + `", "required_slots": ["city"], "optional_slots": {"price": "cheap"}, "result_slots": []}]}`
	}
	turn := func(speaker, text, service string, acts ...string) string {
		var as []string
		for _, a := range acts {
			act, value, _ := strings.Cut(a, "=")
			as = append(as, `{"act": "`+act+`", "slot": "intent", "values": ["`+value+`"]}`)
		}
		return `{"speaker": "` + speaker + `", "utterance": "` + text + `", "frames": [{"service": "` + service + `", "actions": [` + strings.Join(as, ",") + `]}]}`
	}
	fixture := map[string]string{
		"train/schema.json": "[" + svc("Restaurants_1", "Book a table") + "]",
		"dev/schema.json":   "[]",
		"test/schema.json":  "[" + svc("Restaurants_2", "Reserve a table at a restaurant") + "]",
		"test/dialogues_001.json": `[{"dialogue_id": "1_0", "turns": [` +
			turn("USER", "Book me a table in Napa.", "Restaurants_2", "INFORM_INTENT=ReserveRestaurant") + "," +
			turn("SYSTEM", "Shall I reserve it?", "Restaurants_2", "OFFER_INTENT=ReserveRestaurant") + "," +
			turn("USER", "Yes, please.", "Restaurants_2", "AFFIRM_INTENT=ReserveRestaurant") + "," +
			turn("USER", "Another table in Ukiah.", "Restaurants_1", "INFORM_INTENT=ReserveRestaurant") + `]}]`,
	}
	out, res := convertDir(t, "sgd", tree(t, fixture))
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if len(tools) != 1 || tools[0].Name != "Restaurants_ReserveRestaurant" || tools[0].Description != "Reserve a table at a restaurant. Find and book restaurants" {
		t.Fatalf("tools %+v: want the sibling services' intent as one tool, the first schema read (test) kept", tools)
	}
	if p := string(tools[0].Parameters); !strings.Contains(p, `"enum":["cheap","pricey"]`) || !strings.Contains(p, `"required":["city"]`) {
		t.Errorf("parameters %s", p)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	want := []Query{
		{Query: "Book me a table in Napa.", Tools: []string{"Restaurants_ReserveRestaurant"}, ID: "1_0/0", Split: "test-unseen", Lang: "en"},
		{Query: "Another table in Ukiah.", Tools: []string{"Restaurants_ReserveRestaurant"}, ID: "1_0/3", Split: "test-seen", Lang: "en"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("queries\n%+v\nwant\n%+v", qs, want)
	}
	if res.set.Stats.RedefinedDiffers != 1 {
		t.Errorf("stats %+v", res.set.Stats)
	}

	// SGD-X variant 5: each service renamed on its own; the labels follow by
	// position, and the sibling services still make one tool.
	variant := strings.NewReplacer("ReserveRestaurant", "BookTable", "Restaurants_1", "Restaurants_15", "Restaurants_2", "Restaurants_25",
		`"city"`, `"town"`, "Reserve a table", "Get a table")
	fixture["sgd_x/data/v5/train/schema.json"] = variant.Replace(fixture["train/schema.json"])
	fixture["sgd_x/data/v5/dev/schema.json"] = "[]"
	fixture["sgd_x/data/v5/test/schema.json"] = variant.Replace(fixture["test/schema.json"])
	out, _ = convertDir(t, "sgd-x5", tree(t, fixture))
	tools = readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if len(tools) != 1 || tools[0].Name != "Restaurants_BookTable" || !strings.HasPrefix(tools[0].Description, "Get a table at a restaurant.") ||
		!strings.Contains(string(tools[0].Parameters), `"required":["town"]`) {
		t.Fatalf("variant tools %+v", tools)
	}
	qs = readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	if len(qs) != 2 || qs[0].Tools[0] != "Restaurants_BookTable" || qs[1].Tools[0] != "Restaurants_BookTable" {
		t.Errorf("variant queries %+v", qs)
	}

	// A variant that does not line up with the original is refused.
	fixture["sgd_x/data/v5/test/schema.json"] = "[]"
	c, _ := lookup("sgd-x5")
	if _, err := convert(c, tree(t, fixture), ""); err == nil || !strings.Contains(err.Error(), "0 services, the original has 1") {
		t.Errorf("misaligned variant: %v", err)
	}
}

func TestToolAlpaca(t *testing.T) {
	api := func(name string, funcs map[string]string, inst []string, golden string) map[string]any {
		return map[string]any{"Name": name, "Description": "About " + name + ".", "Function_Description": funcs,
			"Instructions": inst, "Golden_Answers": json.RawMessage(golden)}
	}
	real, _ := json.Marshal([]any{api("Nager.Date", map[string]string{
		"CountryInfo": "Get country info\nParameters: {\"countryCode\": \"Required. string. Two letters.\", \"lang\": \"Optional. string. Language.\"}\nOutput: ok",
		"getStatus":   "Parameters: {}\nOutput: ok",
		"components":  "The detailed output format ...",
	}, []string{"Info on China?", "Is it up?"}, `[[{"Action": "CountryInfo", "Action_Input": "{}"}], [{"Action": "getStatus", "Action_Input": "{}"}, {"Action": "getStatus", "Action_Input": "{}"}]]`)})
	sim, _ := json.Marshal([]any{api("Axolotl", map[string]string{
		"getStatus": "Is the service up\nParameters: {}\nOutput: ok",
	}, []string{"Axolotl up?", "Details please."}, `[[{"Action": "getStatus", "Action_Input": "{}"}], [{"Action": "getDetails", "Action_Input": "{}"}]]`)})
	out, res := convertDir(t, "toolalpaca", tree(t, map[string]string{"data/eval_real.json": string(real), "data/eval_simulated.json": string(sim)}))
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if got, want := toolNames(tools), []string{"Axolotl_getStatus", "CountryInfo", "Nager_Date_getStatus"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	if tools[1].Description != "Get country info. Nager.Date: About Nager.Date." || !strings.Contains(string(tools[1].Parameters), `"required":["countryCode"]`) {
		t.Errorf("CountryInfo = %+v %s", tools[1], tools[1].Parameters)
	}
	if tools[2].Description != "Nager.Date: About Nager.Date." {
		t.Errorf("a function without summary: %q", tools[2].Description)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	want := []Query{
		{Query: "Info on China?", Tools: []string{"CountryInfo"}, ID: "Nager.Date/0", Split: "eval_real", Lang: "en"},
		{Query: "Is it up?", Tools: []string{"Nager_Date_getStatus"}, ID: "Nager.Date/1", Split: "eval_real", Lang: "en"},
		{Query: "Axolotl up?", Tools: []string{"Axolotl_getStatus"}, ID: "Axolotl/0", Split: "eval_simulated", Lang: "en"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("queries\n%+v\nwant\n%+v", qs, want)
	}
	if res.set.Stats.Renamed != 2 || res.set.Stats.DroppedQueries != 1 {
		t.Errorf("stats %+v", res.set.Stats)
	}
}

func TestTaskBench(t *testing.T) {
	root := tree(t, map[string]string{
		"taskbench/data_dailylifeapis/tool_desc.json": `{"nodes": [
			{"id": "play_movie_by_title", "desc": "Play a movie by its title", "parameters": [{"name": "title", "type": "string", "desc": "The title of the movie to play"}]},
			{"id": "book_car", "desc": "Book a car", "parameters": [{"name": "date", "type": "date", "desc": "The date"}]}]}`,
		"taskbench/data_dailylifeapis/data.json": strings.Join([]string{
			`{"id": "1", "seed": 1, "n_tools": 1, "type": "single", "sampled_nodes": "[]", "sampled_links": "[]", "instruction": "Could you play 'Inception' for me?", "task_nodes": [{"task": "play_movie_by_title", "arguments": [{"name": "title", "value": "Inception"}]}], "task_links": [], "task_steps": ["Step 1"]}`,
			`{"id": "2", "type": "chain", "instruction": "Book a car, then play a movie.", "task_nodes": [{"arguments": [], "task": "book_car"}, {"task": "play_movie_by_title"}, {"task": "book_car"}], "task_links": []}`,
			`{"id": "3", "type": "single", "instruction": "Order a taxi.", "task_nodes": [{"task": "order_taxi"}]}`,
		}, "\n"),
		"taskbench/data_huggingface/tool_desc.json": `{"nodes": [{"id": "Token Classification", "desc": "Label tokens.", "input-type": ["text"], "output-type": ["text"]}]}`,
		"taskbench/data_huggingface/data.json":      `{"id": "9", "type": "single", "instruction": "Tag the entities in 'Paris is big'.", "task_nodes": [{"task": "Token Classification"}]}`,
	})
	out, res := convertDir(t, "taskbench-dailylifeapis", root)
	tools := readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if got := toolNames(tools); !reflect.DeepEqual(got, []string{"book_car", "play_movie_by_title"}) {
		t.Fatalf("tools %v", got)
	}
	if p := string(tools[0].Parameters); !strings.Contains(p, `"format":"date"`) || !strings.Contains(p, `"type":"string"`) {
		t.Errorf("date parameter %s", p)
	}
	qs := readLines[Query](t, filepath.Join(out, "queries.jsonl"))
	want := []Query{
		{Query: "Could you play 'Inception' for me?", Tools: []string{"play_movie_by_title"}, ID: "1", Split: "single", Lang: "en"},
		{Query: "Book a car, then play a movie.", Tools: []string{"book_car", "play_movie_by_title"}, ID: "2", Split: "chain", Lang: "en"},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("queries\n%+v\nwant\n%+v", qs, want)
	}
	if !reflect.DeepEqual(res.set.Unknown, []string{"3: order_taxi"}) {
		t.Errorf("unknown %v", res.set.Unknown)
	}
	out, _ = convertDir(t, "taskbench-huggingface", root)
	tools = readLines[Tool](t, filepath.Join(out, "tools.jsonl"))
	if len(tools) != 1 || tools[0].Description != "Label tokens. Input: text. Output: text." {
		t.Errorf("huggingface tools %+v", tools)
	}
	readme, _ := os.ReadFile(filepath.Join(out, "README.md"))
	if !bytes.Contains(readme, []byte("a Toolshed manifest would refuse them")) {
		t.Errorf("README does not count the name with a space:\n%s", readme)
	}
}
